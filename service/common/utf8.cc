#include "service/common/utf8.h"

#include <cstring>

namespace unwindd::service {
namespace {

constexpr char kReplacement[] = "\xef\xbf\xbd";  // U+FFFD
constexpr size_t kReplacementSize = 3;

}  // namespace

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
    if (c == 0xe0 && b(1) < 0xa0) return 0;  // overlong
    if (c == 0xed && b(1) > 0x9f) return 0;  // UTF-16 surrogates
    return 3;
  }
  if (c >= 0xf0 && c <= 0xf4) {
    if (!continuation(1) || !continuation(2) || !continuation(3)) return 0;
    if (c == 0xf0 && b(1) < 0x90) return 0;  // overlong
    if (c == 0xf4 && b(1) > 0x8f) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;  // a continuation byte alone, 0xc0/0xc1, or 0xf5..0xff
}

bool IsUtf8(absl::string_view s) {
  for (size_t i = 0; i < s.size();) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    const size_t n = Utf8SequenceLength(s.substr(i));
    if (n == 0) return false;
    i += n;
  }
  return true;
}

size_t Utf8LossySize(absl::string_view s) {
  size_t size = 0;
  for (size_t i = 0; i < s.size();) {
    const size_t n = Utf8SequenceLength(s.substr(i));
    size += n == 0 ? kReplacementSize : n;
    i += n == 0 ? 1 : n;
  }
  return size;
}

char* WriteUtf8Lossy(char* p, absl::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t n = Utf8SequenceLength(s.substr(i));
    if (n == 0) {
      std::memcpy(p, kReplacement, kReplacementSize);
      p += kReplacementSize;
      ++i;
    } else {
      std::memcpy(p, s.data() + i, n);
      p += n;
      i += n;
    }
  }
  return p;
}

std::string Utf8Lossy(absl::string_view s) {
  if (IsUtf8(s)) return std::string(s);
  std::string out(Utf8LossySize(s), '\0');
  WriteUtf8Lossy(out.data(), s);
  return out;
}

}  // namespace unwindd::service
