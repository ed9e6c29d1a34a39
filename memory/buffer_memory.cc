// A copy of some bytes that appears at a fixed target address: test inputs,
// profiler-supplied stack snapshots.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "memory/factories.h"
#include "memory/memory.h"

namespace unwindd::memory {
namespace {

class BufferMemory final : public Memory {
 public:
  BufferMemory(uint64_t start, std::vector<uint8_t> bytes)
      : start_(start), bytes_(std::move(bytes)) {}

  size_t Read(uint64_t addr, absl::Span<uint8_t> dst) override {
    // Unsigned subtraction: addresses below start_ become huge and fail the
    // bounds check, so no wrap-around can index outside bytes_.
    uint64_t offset = addr - start_;
    if (addr < start_ || offset >= bytes_.size()) return 0;
    size_t n = std::min<uint64_t>(bytes_.size() - offset, dst.size());
    // memcpy's pointers must not be null even for 0 bytes (an empty dst).
    if (n > 0) std::memcpy(dst.data(), bytes_.data() + offset, n);
    return n;
  }

 private:
  const uint64_t start_;
  const std::vector<uint8_t> bytes_;
};

}  // namespace

std::unique_ptr<Memory> CreateBufferMemory(uint64_t start,
                                           std::vector<uint8_t> bytes) {
  return std::make_unique<BufferMemory>(start, std::move(bytes));
}

}  // namespace unwindd::memory
