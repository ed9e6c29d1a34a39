// Live process memory through pread(2) on /proc/PID/mem. Works where
// process_vm_readv is compiled out or filtered by seccomp; same access check
// (PTRACE_MODE_ATTACH, made once at open). The file is opened once: the open
// descriptor pins the target's mm, so later reads see the same address space
// even if the pid is reused.
#include <fcntl.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "memory/factories.h"
#include "memory/internal.h"
#include "memory/memory.h"
#include "memory/scoped_fd.h"

namespace unwindd::memory {
namespace {

class ProcMemFileMemory final : public Memory {
 public:
  explicit ProcMemFileMemory(ScopedFd fd) : fd_(std::move(fd)) {}

  size_t Read(uint64_t addr, absl::Span<uint8_t> dst) override {
    if (!fd_.valid()) return 0;
    // pread's offset is signed and the kernel rejects negative ones; user
    // space never lives above 2^63 on the arches we support.
    constexpr uint64_t kMaxOffset = uint64_t{INT64_MAX};
    if (addr > kMaxOffset) return 0;
    const size_t size = std::min<uint64_t>(
        internal::ClampToAddressSpace(addr, dst.size()), kMaxOffset - addr + 1);
    size_t done = 0;
    while (done < size) {
      // mem_rw() copies page by page and returns the bytes copied before an
      // unreadable page; a read starting at one fails with EIO.
      ssize_t n = pread(fd_.get(), dst.data() + done, size - done,
                        static_cast<off_t>(addr + done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    return done;
  }

 private:
  const ScopedFd fd_;
};

}  // namespace

std::unique_ptr<Memory> CreateProcMemFileMemory(pid_t pid) {
  std::string path = "/proc/" + std::to_string(pid) + "/mem";
  // A failed open (process gone, EACCES) gives a memory that reads nothing,
  // which is what CreateProcessMemory's probe detects.
  return std::make_unique<ProcMemFileMemory>(
      OpenCloexec(path.c_str(), O_RDONLY));
}

}  // namespace unwindd::memory
