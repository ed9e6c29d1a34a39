// i386 registers from the kernel's 32-bit `struct user_regs_struct`: what
// PTRACE_GETREGSET NT_PRSTATUS fills for a 32-bit thread (also when the
// tracer is a 64-bit process: the kernel picks the regset view of the
// *tracee*, so iov_len comes back as kUserRegsSize), and the pr_reg array of
// an i386 core file's NT_PRSTATUS note.
//
//   absl::StatusOr<arch::RegisterSet> regs = RegistersFromUserRegs(bytes);
//
// Offsets are spelled out (arch/x86/include/asm/user_32.h) so a 64-bit host
// reads them without the 32-bit headers.
#ifndef UNWINDD_ARCH_X86_REGS_H_
#define UNWINDD_ARCH_X86_REGS_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "arch/register_set.h"

namespace unwindd::arch::x86 {

// DWARF register numbers (i386 SysV psABI, "DWARF Register Number Mapping").
// 8 is the return-address column, which the RegisterSet uses as the PC slot.
enum DwarfReg : int {
  kEax = 0,
  kEcx = 1,
  kEdx = 2,
  kEbx = 3,
  kEsp = 4,
  kEbp = 5,
  kEsi = 6,
  kEdi = 7,
  kEip = 8,
};

// sizeof(struct user_regs_struct) on i386: 17 four-byte slots.
inline constexpr size_t kUserRegsSize = 17 * 4;

// Byte offsets of the slots of the i386 `struct user_regs_struct`, in
// declaration order.
enum UserRegsOffset : size_t {
  kUserEbx = 0 * 4,
  kUserEcx = 1 * 4,
  kUserEdx = 2 * 4,
  kUserEsi = 3 * 4,
  kUserEdi = 4 * 4,
  kUserEbp = 5 * 4,
  kUserEax = 6 * 4,
  kUserXds = 7 * 4,
  kUserXes = 8 * 4,
  kUserXfs = 9 * 4,
  kUserXgs = 10 * 4,
  kUserOrigEax = 11 * 4,
  kUserEip = 12 * 4,
  kUserXcs = 13 * 4,
  kUserEflags = 14 * 4,
  kUserEsp = 15 * 4,
  kUserXss = 16 * 4,
};

// Little-endian 32-bit user_regs_struct bytes -> DWARF 0-8, all valid.
// Extra trailing bytes are ignored; fewer than kUserRegsSize is DataLoss.
absl::StatusOr<RegisterSet> RegistersFromUserRegs(
    absl::Span<const uint8_t> bytes);

}  // namespace unwindd::arch::x86

#endif  // UNWINDD_ARCH_X86_REGS_H_
