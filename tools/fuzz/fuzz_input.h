// Splits a fuzzer's input into typed fields, front to back, never failing:
// past the end every read yields zeros (or an empty span), so any input is a
// valid one. libFuzzer's own FuzzedDataProvider is clang-only; this one
// builds with gcc too, so that the regression tests run the same code.
//
//   FuzzInput in(data, size);
//   uint8_t kind = in.U8();
//   uint64_t pc = in.U64();
//   absl::Span<const uint8_t> section = in.Bytes(in.U16());
//   absl::Span<const uint8_t> rest = in.Rest();
#ifndef UNWINDD_TOOLS_FUZZ_FUZZ_INPUT_H_
#define UNWINDD_TOOLS_FUZZ_FUZZ_INPUT_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "absl/types/span.h"

namespace unwindd::fuzz {

class FuzzInput {
 public:
  FuzzInput(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  size_t remaining() const { return size_ - pos_; }

  // Little-endian; missing bytes read as 0.
  uint64_t Le(int bytes) {
    uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) {
      if (pos_ < size_) v |= uint64_t{data_[pos_++]} << (8 * i);
    }
    return v;
  }
  uint8_t U8() { return static_cast<uint8_t>(Le(1)); }
  uint16_t U16() { return static_cast<uint16_t>(Le(2)); }
  uint32_t U32() { return static_cast<uint32_t>(Le(4)); }
  uint64_t U64() { return Le(8); }
  bool Bool() { return (U8() & 1) != 0; }

  // Up to `n` bytes (fewer at the end of the input).
  absl::Span<const uint8_t> Bytes(size_t n) {
    n = std::min(n, remaining());
    absl::Span<const uint8_t> out(data_ + pos_, n);
    pos_ += n;
    return out;
  }
  absl::Span<const uint8_t> Rest() { return Bytes(remaining()); }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

}  // namespace unwindd::fuzz

#endif  // UNWINDD_TOOLS_FUZZ_FUZZ_INPUT_H_
