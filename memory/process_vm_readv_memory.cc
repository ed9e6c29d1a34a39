// Live process memory through process_vm_readv(2): one syscall per read, no
// need to be the tracer or for the target to be stopped. The preferred
// mechanism; needs PTRACE_MODE_ATTACH access to the target (root, or same uid
// and allowed by Yama) and a kernel with CONFIG_CROSS_MEMORY_ATTACH.
#include <sys/types.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <memory>

#include "memory/factories.h"
#include "memory/internal.h"
#include "memory/memory.h"

namespace unwindd::memory {
namespace {

class ProcessVmReadvMemory final : public Memory {
 public:
  explicit ProcessVmReadvMemory(pid_t pid) : pid_(pid) {}

  size_t Read(uint64_t addr, absl::Span<uint8_t> dst) override {
    // Target addresses that do not fit our pointers cannot be named to the
    // kernel (only possible on a 32-bit host).
    if (addr > UINTPTR_MAX) return 0;
    const size_t size = internal::ClampToAddressSpace(addr, dst.size());
    size_t done = 0;
    while (done < size) {
      // One remote iovec: the kernel copies page by page and, when it hits
      // an unmapped page, returns the count copied so far (the readable
      // prefix). With no bytes copied it fails with EFAULT. It also caps one
      // call at MAX_RW_COUNT, hence the loop.
      iovec local = {dst.data() + done, size - done};
      iovec remote = {
          reinterpret_cast<void*>(static_cast<uintptr_t>(addr + done)),
          size - done};
      ssize_t n = process_vm_readv(pid_, &local, 1, &remote, 1, 0);
      if (n < 0 && errno == EINTR) continue;
      // EFAULT: unreadable; ESRCH: process gone; EPERM: not allowed. All
      // mean "no more bytes" to the caller.
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    return done;
  }

 private:
  const pid_t pid_;
};

}  // namespace

std::unique_ptr<Memory> CreateProcessVmReadvMemory(pid_t pid) {
  return std::make_unique<ProcessVmReadvMemory>(pid);
}

}  // namespace unwindd::memory
