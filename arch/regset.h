// Kernel register layouts for any target architecture: the NT_PRSTATUS
// regset (PTRACE_GETREGSET, and pr_reg in a core file) and the core file's
// whole NT_PRSTATUS note. Live and core targets call these with the arch
// they determined from the target (e_machine, the executable, the regset
// size), never the host's; each arch's layout is in arch/<arch>/regs.h.
//
//   absl::StatusOr<RegisterSet> r = RegistersFromPrStatus(Arch::kX86, bytes);
//   absl::StatusOr<CorePrStatus> t = ParseCorePrStatus(arch, note_desc);
#ifndef UNWINDD_ARCH_REGSET_H_
#define UNWINDD_ARCH_REGSET_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "arch/arch.h"
#include "arch/register_set.h"

namespace unwindd::arch {

// sizeof the NT_PRSTATUS regset (elf_gregset_t): x86_64 216, x86 68,
// aarch64 272.
size_t PrStatusRegsetSize(Arch arch);

// NT_PRSTATUS regset bytes of `arch` -> registers by DWARF number. Extra
// trailing bytes are ignored; too few is DataLoss.
absl::StatusOr<RegisterSet> RegistersFromPrStatus(
    Arch arch, absl::Span<const uint8_t> bytes);

// Which arch a regset of `size` bytes belongs to, for a thread whose
// executable says `exe_arch`: a 64-bit kernel hands a 32-bit (compat) thread
// the i386 regset and a 64-bit one the x86_64 regset, whatever the tracer
// is. Returns exe_arch when the size does not tell.
Arch RegsetArch(Arch exe_arch, size_t size);

// A core file's NT_PRSTATUS note: struct elf_prstatus (include/uapi/linux/
// elfcore.h) in the target's word size.
struct CorePrStatus {
  pid_t pid = 0;    // pr_pid: the thread's TID
  int signal = 0;   // pr_cursig: the signal being delivered, 0 if none
  RegisterSet regs;
};

// Offset of pr_reg in struct elf_prstatus: 112 on 64-bit, 72 on i386.
size_t PrStatusRegOffset(Arch arch);

// DataLoss if `desc` is too short for `arch`'s elf_prstatus.
absl::StatusOr<CorePrStatus> ParseCorePrStatus(Arch arch,
                                               absl::Span<const uint8_t> desc);

}  // namespace unwindd::arch

#endif  // UNWINDD_ARCH_REGSET_H_
