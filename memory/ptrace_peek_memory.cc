// Live process memory through PTRACE_PEEKDATA, one aligned word per syscall:
// the last resort when neither process_vm_readv nor /proc/PID/mem is usable
// (e.g. both blocked by a seccomp or LSM policy). The caller must be the
// tracer — the very thread that attached — of `pid`, and that thread must be
// in a ptrace-stop; otherwise every read returns 0 (ESRCH). Any stopped
// thread of the process works, since threads share the address space.
#include <sys/ptrace.h>
#include <sys/types.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>

#include "memory/factories.h"
#include "memory/internal.h"
#include "memory/memory.h"

namespace unwindd::memory {
namespace {

class PtracePeekMemory final : public Memory {
 public:
  explicit PtracePeekMemory(pid_t pid) : pid_(pid) {}

  size_t Read(uint64_t addr, absl::Span<uint8_t> dst) override {
    constexpr uint64_t kWord = sizeof(long);
    if (addr > UINTPTR_MAX) return 0;
    const size_t size = internal::ClampToAddressSpace(addr, dst.size());
    size_t done = 0;
    while (done < size) {
      const uint64_t a = addr + done;
      // Aligned words never straddle a page, so an unreadable page fails
      // exactly at its first word and the readable prefix is exact.
      const uint64_t word_addr = a & ~(kWord - 1);
      const uint64_t skip = a - word_addr;
      // PEEKDATA returns the word itself, so -1 is a valid value: only errno
      // tells failure apart.
      errno = 0;
      long word = ptrace(
          PTRACE_PEEKDATA, pid_,
          reinterpret_cast<void*>(static_cast<uintptr_t>(word_addr)), nullptr);
      if (word == -1 && errno != 0) break;  // EIO/EFAULT unmapped, ESRCH
      // memcpy of the native word reproduces the target's byte order.
      const size_t n = std::min<uint64_t>(kWord - skip, size - done);
      std::memcpy(dst.data() + done,
                  reinterpret_cast<const uint8_t*>(&word) + skip, n);
      done += n;
    }
    return done;
  }

 private:
  const pid_t pid_;
};

}  // namespace

std::unique_ptr<Memory> CreatePtracePeekMemory(pid_t pid) {
  return std::make_unique<PtracePeekMemory>(pid);
}

}  // namespace unwindd::memory
