// aarch64 registers from the kernel's `struct user_pt_regs`: what
// PTRACE_GETREGSET NT_PRSTATUS fills for an aarch64 thread, and the pr_reg
// array (elf_gregset_t) inside an aarch64 core file's NT_PRSTATUS note.
//
//   absl::StatusOr<arch::RegisterSet> regs = RegistersFromUserPtRegs(bytes);
//   uint64_t lr = regs->Get(aarch64::kLr);
//
// The layout is spelled out with explicit offsets (arch/arm64/include/uapi/
// asm/ptrace.h), so cores are read the same on any host.
#ifndef UNWINDD_ARCH_AARCH64_REGS_H_
#define UNWINDD_ARCH_AARCH64_REGS_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "arch/register_set.h"

namespace unwindd::arch::aarch64 {

// DWARF register numbers (AADWARF64 §4.1): x0-x30 are 0-30, sp is 31. The
// PC has no DWARF column in CFI; the RegisterSet keeps it in slot 32 (the
// number AADWARF64 reserves for it). 34 is RA_SIGN_STATE.
inline constexpr int kX0 = 0;
inline constexpr int kFp = 29;  // x29, the frame-record pointer (AAPCS64 §6.2.3)
inline constexpr int kLr = 30;  // x30, the link register: the CIEs' RA column
inline constexpr int kSp = 31;
inline constexpr int kPc = 32;

// struct user_pt_regs { __u64 regs[31]; __u64 sp; __u64 pc; __u64 pstate; }
inline constexpr size_t kUserPtRegsSize = 34 * 8;
inline constexpr size_t kSpOffset = 31 * 8;
inline constexpr size_t kPcOffset = 32 * 8;
inline constexpr size_t kPstateOffset = 33 * 8;

// Little-endian user_pt_regs bytes -> x0-x30, sp, pc, all valid. Extra
// trailing bytes are ignored; fewer than kUserPtRegsSize is DataLoss.
absl::StatusOr<RegisterSet> RegistersFromUserPtRegs(
    absl::Span<const uint8_t> bytes);

}  // namespace unwindd::arch::aarch64

#endif  // UNWINDD_ARCH_AARCH64_REGS_H_
