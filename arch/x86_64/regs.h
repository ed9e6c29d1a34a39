// x86_64 registers from the kernel's `struct user_regs_struct`: what
// PTRACE_GETREGSET NT_PRSTATUS fills for a 64-bit thread, and the pr_reg
// array inside an x86_64 core file's NT_PRSTATUS note.
//
//   absl::StatusOr<arch::RegisterSet> regs = RegistersFromUserRegs(bytes);
//   uint64_t pc = regs->pc();
//
// The layout is spelled out with explicit offsets rather than taken from
// <sys/user.h>, so that cores are read the same on any host.
#ifndef UNWINDD_ARCH_X86_64_REGS_H_
#define UNWINDD_ARCH_X86_64_REGS_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "arch/register_set.h"

namespace unwindd::arch::x86_64 {

// sizeof(struct user_regs_struct): 27 eight-byte slots.
inline constexpr size_t kUserRegsSize = 27 * 8;

// Byte offsets of the slots in `struct user_regs_struct`
// (arch/x86/include/asm/user_64.h), in declaration order.
enum UserRegsOffset : size_t {
  kR15 = 0 * 8,
  kR14 = 1 * 8,
  kR13 = 2 * 8,
  kR12 = 3 * 8,
  kRbp = 4 * 8,
  kRbx = 5 * 8,
  kR11 = 6 * 8,
  kR10 = 7 * 8,
  kR9 = 8 * 8,
  kR8 = 9 * 8,
  kRax = 10 * 8,
  kRcx = 11 * 8,
  kRdx = 12 * 8,
  kRsi = 13 * 8,
  kRdi = 14 * 8,
  kOrigRax = 15 * 8,
  kRip = 16 * 8,
  kCs = 17 * 8,
  kEflags = 18 * 8,
  kRsp = 19 * 8,
  kSs = 20 * 8,
  kFsBase = 21 * 8,
  kGsBase = 22 * 8,
  kDs = 23 * 8,
  kEs = 24 * 8,
  kFs = 25 * 8,
  kGs = 26 * 8,
};

// Little-endian user_regs_struct bytes -> the 17 DWARF registers (0 rax ..
// 15 r15, 16 rip as the PC slot), all valid. Extra trailing bytes are
// ignored; fewer than kUserRegsSize is DataLoss.
absl::StatusOr<RegisterSet> RegistersFromUserRegs(
    absl::Span<const uint8_t> bytes);

}  // namespace unwindd::arch::x86_64

#endif  // UNWINDD_ARCH_X86_64_REGS_H_
