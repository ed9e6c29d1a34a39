#include "service/common/json.h"

#include "absl/strings/str_format.h"
#include "service/common/utf8.h"

namespace unwindd::service {

std::string JsonString(absl::string_view s) {
  std::string out = "\"";
  out.reserve(s.size() + 2);
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"':
        out += "\\\"";
        ++i;
        continue;
      case '\\':
        out += "\\\\";
        ++i;
        continue;
      case '\n':
        out += "\\n";
        ++i;
        continue;
      case '\t':
        out += "\\t";
        ++i;
        continue;
      default:
        break;
    }
    if (c < 0x20 || c == 0x7f) {
      absl::StrAppendFormat(&out, "\\u%04x", c);
      ++i;
      continue;
    }
    const size_t n = Utf8SequenceLength(s.substr(i));
    if (n == 0) {
      absl::StrAppendFormat(&out, "\\u%04x", c);  // a byte that is not UTF-8
      ++i;
      continue;
    }
    out.append(s.data() + i, n);
    i += n;
  }
  out += "\"";
  return out;
}

}  // namespace unwindd::service
