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
#include "arch/x86_64/regs.h"
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
  switch (machine) {
    case EM_X86_64:  // also x32, whose threads have the 64-bit regset
      return arch::Arch::kX86_64;
    default:
      return absl::UnimplementedError(absl::StrFormat(
          "architecture of process %d (ELF e_machine %d) is not supported yet",
          pid, machine));
  }
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
  switch (a) {
    case arch::Arch::kX86_64:
      return arch::x86_64::RegistersFromUserRegs(bytes);
    default:
      return absl::UnimplementedError(absl::StrCat("registers of ",
                                                   arch::GetArchInfo(a).name,
                                                   " are not supported yet"));
  }
}

}  // namespace unwindd::proc
