// Which architecture a live process is, and how its ptrace NT_PRSTATUS
// regset becomes a RegisterSet: x86_64, i386 (a 32-bit process traced by
// this 64-bit one) and aarch64. Decided from the target, never the host: the
// executable's e_machine and class, then each thread's regset size.
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
// 20): EM_X86_64 -> kX86_64, EM_386 (ELFCLASS32) -> kX86, EM_AARCH64 ->
// kAArch64. DataLoss if not ELF, Unimplemented for other machines; `pid`
// only names the process in messages.
absl::StatusOr<arch::Arch> ArchFromElfHeader(absl::Span<const uint8_t> header,
                                             pid_t pid);

// The architecture of thread `tid` of `pid`, from its /proc/.../exe.
absl::StatusOr<arch::Arch> DetectArch(pid_t pid, pid_t tid);

// PTRACE_GETREGSET NT_PRSTATUS bytes -> registers, for an arch DetectArch
// accepted. On x86 the regset's size picks i386 or x86_64 (the kernel gives
// a compat thread the 68-byte i386 regset), so RegisterSet::arch() may
// differ from `arch`.
absl::StatusOr<arch::RegisterSet> RegistersFromPrstatus(
    arch::Arch arch, absl::Span<const uint8_t> bytes);

}  // namespace unwindd::proc

#endif  // UNWINDD_PROC_LIVE_ARCH_H_
