// Test-only helpers that hand-assemble little-endian CFI bytes: fixed-size
// fields, LEB128, strings, and .eh_frame / .debug_frame entries whose length
// and CIE pointer fields are computed for you.
//
//   TestBytes section;
//   size_t cie = AppendEhCie(section, TestBytes().U8(1).Str("zR")...);
//   size_t fde = AppendEhFde(section, cie, TestBytes().S32(...)...);
#ifndef UNWINDD_UNWINDER_CFI_TEST_BYTES_H_
#define UNWINDD_UNWINDER_CFI_TEST_BYTES_H_

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace unwindd::unwinder {

class TestBytes {
 public:
  TestBytes& U8(uint8_t v) { return Le(v, 1); }
  TestBytes& U16(uint16_t v) { return Le(v, 2); }
  TestBytes& U32(uint32_t v) { return Le(v, 4); }
  TestBytes& U64(uint64_t v) { return Le(v, 8); }
  TestBytes& S16(int16_t v) { return Le(static_cast<uint16_t>(v), 2); }
  TestBytes& S32(int32_t v) { return Le(static_cast<uint32_t>(v), 4); }
  TestBytes& S64(int64_t v) { return Le(static_cast<uint64_t>(v), 8); }
  TestBytes& Raw(std::initializer_list<uint8_t> bytes) {
    bytes_.insert(bytes_.end(), bytes.begin(), bytes.end());
    return *this;
  }
  TestBytes& Append(const TestBytes& other) {
    bytes_.insert(bytes_.end(), other.bytes_.begin(), other.bytes_.end());
    return *this;
  }
  TestBytes& Zeros(size_t n) {
    bytes_.insert(bytes_.end(), n, 0);
    return *this;
  }
  TestBytes& Uleb(uint64_t v) {
    do {
      uint8_t b = v & 0x7f;
      v >>= 7;
      bytes_.push_back(v != 0 ? (b | 0x80) : b);
    } while (v != 0);
    return *this;
  }
  TestBytes& Sleb(int64_t v) {
    bool more = true;
    while (more) {
      uint8_t b = v & 0x7f;
      v >>= 7;  // arithmetic shift
      more = !((v == 0 && (b & 0x40) == 0) || (v == -1 && (b & 0x40) != 0));
      bytes_.push_back(more ? (b | 0x80) : b);
    }
    return *this;
  }
  // The string and its NUL.
  TestBytes& Str(absl::string_view s) {
    bytes_.insert(bytes_.end(), s.begin(), s.end());
    bytes_.push_back(0);
    return *this;
  }
  void PatchU32(size_t at, uint32_t v) {
    for (int i = 0; i < 4; ++i) bytes_[at + i] = (v >> (8 * i)) & 0xff;
  }

  size_t size() const { return bytes_.size(); }
  absl::Span<const uint8_t> span() const { return bytes_; }
  const std::vector<uint8_t>& bytes() const { return bytes_; }

 private:
  TestBytes& Le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) bytes_.push_back((v >> (8 * i)) & 0xff);
    return *this;
  }
  std::vector<uint8_t> bytes_;
};

// Appends length + id + body; returns the entry's offset. `id` is written
// with 4 bytes, or 8 with `dwarf64` (whose length is 0xffffffff + u64).
inline size_t AppendEntry(TestBytes& section, uint64_t id,
                          const TestBytes& body, bool dwarf64 = false) {
  const size_t offset = section.size();
  const uint64_t id_size = dwarf64 ? 8 : 4;
  if (dwarf64) {
    section.U32(0xffffffffu).U64(id_size + body.size()).U64(id);
  } else {
    section.U32(static_cast<uint32_t>(id_size + body.size()))
        .U32(static_cast<uint32_t>(id));
  }
  section.Append(body);
  return offset;
}

// .eh_frame CIE (id 0). `body` starts with the version byte.
inline size_t AppendEhCie(TestBytes& section, const TestBytes& body,
                          bool dwarf64 = false) {
  return AppendEntry(section, 0, body, dwarf64);
}

// .eh_frame FDE: the CIE pointer is the distance from the pointer field back
// to the CIE (LSB §10.6.1.2). `body` starts with pc_begin.
inline size_t AppendEhFde(TestBytes& section, size_t cie_offset,
                          const TestBytes& body, bool dwarf64 = false) {
  const size_t pointer_field = section.size() + (dwarf64 ? 12 : 4);
  return AppendEntry(section, pointer_field - cie_offset, body, dwarf64);
}

}  // namespace unwindd::unwinder

#endif  // UNWINDD_UNWINDER_CFI_TEST_BYTES_H_
