// Which architecture a live process is, and how its ptrace NT_PRSTATUS
// regset becomes a RegisterSet. The one place that decides which
// architectures live targets support (x86_64 for now; x86 and aarch64 come
// later), so adding one touches only this file and arch/.
//
//   absl::StatusOr<arch::Arch> a = DetectArch(pid, tid);
//   absl::StatusOr<arch::RegisterSet> r = RegistersFromPrstatus(*a, bytes);
#ifndef UNWINDD_PROC_LIVE_ARCH_H_
#define UNWINDD_PROC_LIVE_ARCH_H_

#include <sys/types.h>

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "arch/arch.h"
#include "arch/register_set.h"

namespace unwindd::proc {

// From the first bytes of an ELF file (e_ident, e_type, e_machine: at least
// 20). DataLoss if not ELF, Unimplemented for unsupported machines; `pid`
// only names the process in messages.
absl::StatusOr<arch::Arch> ArchFromElfHeader(absl::Span<const uint8_t> header,
                                             pid_t pid);

// The architecture of thread `tid` of `pid`, from its /proc/.../exe.
absl::StatusOr<arch::Arch> DetectArch(pid_t pid, pid_t tid);

// PTRACE_GETREGSET NT_PRSTATUS bytes -> registers, for an arch DetectArch
// accepted.
absl::StatusOr<arch::RegisterSet> RegistersFromPrstatus(
    arch::Arch arch, absl::Span<const uint8_t> bytes);

}  // namespace unwindd::proc

#endif  // UNWINDD_PROC_LIVE_ARCH_H_
