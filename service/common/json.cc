#include "service/common/json.h"

#include "absl/strings/str_format.h"

namespace unwindd::service {

size_t Utf8SequenceLength(absl::string_view s) {
  if (s.empty()) return 0;
  const auto b = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  const auto continuation = [&](size_t i) { return i < s.size() && (b(i) & 0xc0) == 0x80; };
  const unsigned char c = b(0);
  if (c < 0x80) return 1;
  // RFC 3629 section 4's table: the second byte's range depends on the first.
  if (c >= 0xc2 && c <= 0xdf) return continuation(1) ? 2 : 0;
  if (c >= 0xe0 && c <= 0xef) {
    if (!continuation(1) || !continuation(2)) return 0;
    if (c == 0xe0 && b(1) < 0xa0) return 0;   // overlong
    if (c == 0xed && b(1) > 0x9f) return 0;   // UTF-16 surrogates
    return 3;
  }
  if (c >= 0xf0 && c <= 0xf4) {
    if (!continuation(1) || !continuation(2) || !continuation(3)) return 0;
    if (c == 0xf0 && b(1) < 0x90) return 0;   // overlong
    if (c == 0xf4 && b(1) > 0x8f) return 0;   // above U+10FFFF
    return 4;
  }
  return 0;  // a continuation byte alone, 0xc0/0xc1, or 0xf5..0xff
}

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
