#include "proc/live_arch.h"

#include <elf.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "arch/regset.h"
#include "memory/scoped_fd.h"
#include "proc/procfs.h"

namespace unwindd::proc {

// e_ident (16) + e_type (2) + e_machine (2).
constexpr size_t kHeaderBytes = 20;

absl::StatusOr<arch::Arch> ArchFromElfHeader(absl::Span<const uint8_t> h,
                                             pid_t pid) {
  if (h.size() < kHeaderBytes || memcmp(h.data(), ELFMAG, SELFMAG) != 0) {
    return absl::DataLossError(
        absl::StrFormat("executable of process %d is not an ELF file", pid));
  }
  // e_machine is in the file's byte order.
  const uint16_t machine =
      h[EI_DATA] == ELFDATA2MSB ? (h[18] << 8) | h[19] : h[18] | (h[19] << 8);
  // Only little-endian targets exist among those we support.
  absl::StatusOr<arch::Arch> a =
      h[EI_DATA] == ELFDATA2LSB
          ? arch::ArchFromElfMachine(machine, h[EI_CLASS])
          : absl::UnimplementedError("big-endian");
  if (!a.ok()) {
    return absl::UnimplementedError(absl::StrFormat(
        "architecture of process %d (ELF e_machine %d, class %d) is not "
        "supported",
        pid, machine, h[EI_CLASS]));
  }
  return *a;
}

absl::StatusOr<arch::Arch> DetectArch(pid_t pid, pid_t tid) {
  // The thread's own exe link: a main thread that has exited (pthread_exit)
  // no longer has one, its siblings still do.
  const std::string path = TaskPath(pid, tid, "exe");
  memory::ScopedFd fd = memory::OpenCloexec(path.c_str(), O_RDONLY);
  if (!fd.valid()) return ProcError(errno, pid, path);
  uint8_t header[kHeaderBytes];
  ssize_t n;
  do {
    n = pread(fd.get(), header, sizeof(header), 0);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return ProcError(errno, pid, path);
  return ArchFromElfHeader(absl::MakeConstSpan(header, n), pid);
}

absl::StatusOr<arch::RegisterSet> RegistersFromPrstatus(
    arch::Arch a, absl::Span<const uint8_t> bytes) {
  // The kernel hands out the regset of the thread's own view (the i386 one
  // for a compat thread, whichever process asks), so its size has the last
  // word on x86.
  return arch::RegistersFromPrStatus(arch::RegsetArch(a, bytes.size()), bytes);
}

}  // namespace unwindd::proc
