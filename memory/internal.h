// Private helpers shared by the Memory implementations in memory_impl.
#ifndef UNWINDD_MEMORY_INTERNAL_H_
#define UNWINDD_MEMORY_INTERNAL_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace unwindd::memory::internal {

// How many of `size` bytes starting at target address `addr` lie below 2^64:
// a read must stop at the top of the address space rather than wrap to 0.
inline size_t ClampToAddressSpace(uint64_t addr, size_t size) {
  if (addr == 0) return size;
  return static_cast<size_t>(std::min<uint64_t>(size, uint64_t{0} - addr));
}

}  // namespace unwindd::memory::internal

#endif  // UNWINDD_MEMORY_INTERNAL_H_
