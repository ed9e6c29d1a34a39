// The CFA program interpreter (DWARF 5 §6.4.2): bytes in, Row out. Pure: no
// memory of the target is touched, so it is testable byte by byte.
//
//   absl::StatusOr<Row> row = ComputeRow(fde.cie, fde, file_pc, Arch::kX86_64);
//
// Runs the CIE's initial instructions, then the FDE's until the location
// passes `pc`. Every DWARF 5 call-frame instruction, plus DW_CFA_GNU_args_size,
// DW_CFA_GNU_negative_offset_extended and (aarch64) DW_CFA_AARCH64_negate_ra_state
// (0x2d, which is DW_CFA_GNU_window_save elsewhere). One small handler per
// opcode. Limits: remember_state depth 64, and the program cannot run longer
// than its bytes. Malformed programs are DataLoss; unknown opcodes
// Unimplemented.
#ifndef UNWINDD_UNWINDER_CFI_CFA_VM_H_
#define UNWINDD_UNWINDER_CFI_CFA_VM_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "arch/arch.h"
#include "unwinder/cfi/cfi_section.h"
#include "unwinder/cfi/row.h"

namespace unwindd::unwinder {

inline constexpr int kMaxRememberStateDepth = 64;

// The row for file address `pc`, which must be in [fde.pc_begin, fde.pc_end).
// Row::pc_lo/pc_hi is the range of PCs the returned rules hold for.
absl::StatusOr<Row> ComputeRow(const Cie& cie, const Fde& fde, uint64_t pc,
                               arch::Arch arch);

}  // namespace unwindd::unwinder

#endif  // UNWINDD_UNWINDER_CFI_CFA_VM_H_
