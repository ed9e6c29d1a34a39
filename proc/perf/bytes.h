// Little-endian loads and a bounds-checked cursor over perf.data bytes.
// perf.data records are 8-byte aligned in the file, but a reader cannot
// rely on the buffer it was handed being aligned, so every load is a
// memcpy; the format is read as little-endian whatever the host.
//
//   Cursor c(record);
//   uint64_t ip;
//   if (!c.U64(ip)) return Truncated(...);
#ifndef UNWINDD_PROC_PERF_BYTES_H_
#define UNWINDD_PROC_PERF_BYTES_H_

#include <bit>
#include <cstdint>
#include <cstring>

#include "absl/types/span.h"

namespace unwindd::proc::perf {

inline uint64_t Load64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
  return v;
}
inline uint32_t Load32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap32(v);
  return v;
}
inline uint16_t Load16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap16(v);
  return v;
}

// A view of bytes inside a record.
class Bytes {
 public:
  Bytes() = default;
  explicit Bytes(absl::Span<const uint8_t> s) : s_(s) {}
  absl::Span<const uint8_t> span() const { return s_; }
  size_t size() const { return s_.size(); }
  bool empty() const { return s_.empty(); }
  const uint8_t* data() const { return s_.data(); }

 private:
  absl::Span<const uint8_t> s_;
};

// `count` little-endian u64s inside a record (e.g. a callchain).
class U64Array {
 public:
  U64Array() = default;
  U64Array(const uint8_t* p, size_t count) : p_(p), count_(count) {}
  size_t size() const { return count_; }
  bool empty() const { return count_ == 0; }
  uint64_t operator[](size_t i) const { return Load64(p_ + 8 * i); }

 private:
  const uint8_t* p_ = nullptr;
  size_t count_ = 0;
};

// Reads forward through a span; every read says whether it fit.
class Cursor {
 public:
  explicit Cursor(absl::Span<const uint8_t> s, size_t pos = 0)
      : s_(s), pos_(pos > s.size() ? s.size() : pos) {}

  size_t pos() const { return pos_; }
  size_t remaining() const { return s_.size() - pos_; }

  bool U64(uint64_t& v) {
    if (remaining() < 8) return false;
    v = Load64(s_.data() + pos_);
    pos_ += 8;
    return true;
  }
  bool U32(uint32_t& v) {
    if (remaining() < 4) return false;
    v = Load32(s_.data() + pos_);
    pos_ += 4;
    return true;
  }
  bool Skip(uint64_t n) {
    if (remaining() < n) return false;
    pos_ += n;
    return true;
  }
  // `n` bytes in place.
  bool Take(uint64_t n, absl::Span<const uint8_t>& out) {
    if (remaining() < n) return false;
    out = s_.subspan(pos_, n);
    pos_ += n;
    return true;
  }
  // `count` u64s in place; false if count * 8 overflows or does not fit.
  bool TakeU64s(uint64_t count, U64Array& out) {
    if (count > remaining() / 8) return false;
    out = U64Array(s_.data() + pos_, count);
    pos_ += count * 8;
    return true;
  }

 private:
  absl::Span<const uint8_t> s_;
  size_t pos_;
};

}  // namespace unwindd::proc::perf

#endif  // UNWINDD_PROC_PERF_BYTES_H_
