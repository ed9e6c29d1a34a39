// A fake target address space for tests: individually mapped bytes, every
// other address unreadable, so partial reads at the edge of what a test
// mapped behave like reads at the end of a real mapping.
//
//   MapMemory mem;
//   mem.PutLe(0x7ffd0000, 0x401234, 8);   // a return address on the stack
#ifndef UNWINDD_MEMORY_TESTING_MAP_MEMORY_H_
#define UNWINDD_MEMORY_TESTING_MAP_MEMORY_H_

#include <cstdint>
#include <map>
#include <vector>

#include "memory/memory.h"

namespace unwindd::memory::testing {

class MapMemory : public Memory {
 public:
  void Put(uint64_t addr, const std::vector<uint8_t>& bytes) {
    for (size_t i = 0; i < bytes.size(); ++i) bytes_[addr + i] = bytes[i];
  }
  // `size` bytes of `v`, little-endian.
  void PutLe(uint64_t addr, uint64_t v, int size) {
    // Bytes past the 8th are zero (a shift by 64 or more is undefined).
    for (int i = 0; i < size; ++i) {
      bytes_[addr + i] = i < 8 ? (v >> (8 * i)) & 0xff : 0;
    }
  }
  size_t Read(uint64_t addr, absl::Span<uint8_t> dst) override {
    size_t n = 0;
    for (; n < dst.size(); ++n) {
      auto it = bytes_.find(addr + n);
      if (it == bytes_.end()) break;
      dst[n] = it->second;
    }
    return n;
  }

 private:
  std::map<uint64_t, uint8_t> bytes_;
};

}  // namespace unwindd::memory::testing

#endif  // UNWINDD_MEMORY_TESTING_MAP_MEMORY_H_
