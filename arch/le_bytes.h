// Little-endian loads from kernel structures (regsets, core notes, signal
// frames) copied out of the target. Every supported target is little-endian,
// whatever the host is; callers check the span is long enough.
#ifndef UNWINDD_ARCH_LE_BYTES_H_
#define UNWINDD_ARCH_LE_BYTES_H_

#include <cstddef>
#include <cstdint>

#include "absl/types/span.h"

namespace unwindd::arch {

inline uint64_t LoadLe(absl::Span<const uint8_t> bytes, size_t offset,
                       int size) {
  uint64_t v = 0;
  for (int i = size - 1; i >= 0; --i) v = (v << 8) | bytes[offset + i];
  return v;
}

inline uint64_t LoadLe64(absl::Span<const uint8_t> bytes, size_t offset) {
  return LoadLe(bytes, offset, 8);
}

inline uint32_t LoadLe32(absl::Span<const uint8_t> bytes, size_t offset) {
  return static_cast<uint32_t>(LoadLe(bytes, offset, 4));
}

}  // namespace unwindd::arch

#endif  // UNWINDD_ARCH_LE_BYTES_H_
