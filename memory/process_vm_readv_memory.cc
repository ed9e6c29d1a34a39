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

#include "absl/container/inlined_vector.h"
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

  void ReadMany(absl::Span<ReadRequest> requests) override {
    // One call for the lot: local and remote iovecs pair up request by
    // request. The kernel copies them in order and stops at the first
    // unreadable page, returning the bytes copied so far: the requests
    // before that point are complete, the rest are finished one by one by
    // Read (which finds the readable prefix of each).
    constexpr size_t kMaxIov = 1024;  // UIO_MAXIOV
    size_t first = 0;
    while (first < requests.size()) {
      const size_t count = std::min(kMaxIov, requests.size() - first);
      // Sized to the requests (a few, one per thread, as a rule): two
      // arrays of kMaxIov would take 32 KiB of stack, fresh pages.
      absl::InlinedVector<iovec, 16> local(count);
      absl::InlinedVector<iovec, 16> remote(count);
      size_t iov = 0;
      for (size_t i = first; i < first + count; ++i) {
        ReadRequest& r = requests[i];
        r.done = 0;
        const size_t size = r.addr > UINTPTR_MAX
                                ? 0
                                : internal::ClampToAddressSpace(r.addr, r.dst.size());
        if (size == 0) continue;
        local[iov] = {r.dst.data(), size};
        remote[iov] = {reinterpret_cast<void*>(static_cast<uintptr_t>(r.addr)), size};
        ++iov;
      }
      ssize_t n;
      do {
        n = iov == 0 ? 0 : process_vm_readv(pid_, local.data(), iov, remote.data(), iov, 0);
      } while (n < 0 && errno == EINTR);
      size_t left = n > 0 ? static_cast<size_t>(n) : 0;
      for (size_t i = first; i < first + count; ++i) {
        ReadRequest& r = requests[i];
        const size_t size = r.addr > UINTPTR_MAX
                                ? 0
                                : internal::ClampToAddressSpace(r.addr, r.dst.size());
        const size_t got = std::min(left, size);
        left -= got;
        r.done = got;
        if (got < size) {
          r.done += Read(r.addr + got, r.dst.subspan(got, size - got));
        }
      }
      first += count;
    }
  }

 private:
  const pid_t pid_;
};

}  // namespace

std::unique_ptr<Memory> CreateProcessVmReadvMemory(pid_t pid) {
  return std::make_unique<ProcessVmReadvMemory>(pid);
}

}  // namespace unwindd::memory
