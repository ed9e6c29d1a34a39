// Turns one SFrame FRE into the Row every unwind source produces (the same
// value the CFA VM makes from .eh_frame), so the step loop and ApplyRow do
// not know SFrame exists.
//
//   absl::StatusOr<Row> row = FreToRow(header, fde, fre, pc_lo, pc_hi, arena);
//
// SFrame §3 "Interpretation of SFrame FREs":
//   default FDEs — word 0: CFA = (SP or FP) + offset; then, if the header
//     has no fixed RA offset, RA = *(CFA + word 1); then FP = *(CFA + word).
//     AMD64: RA is always at CFA + the header's fixed offset (-8).
//     AArch64: RA and FP are tracked only once the frame record is saved;
//     before that the RA is still in x30 (LR).
//   flexible FDEs (v3) — pairs of (control word, offset) for CFA, RA, FP;
//     control = regnum << 3 | deref << 1 | reg_p; a lone 0 word is padding.
//   an FRE without data words: the RA is undefined (outermost frame).
// The aarch64 mangled-RA bit becomes Row::ra_signed (PAC bits to strip).
#ifndef UNWINDD_UNWINDER_SFRAME_TO_ROW_H_
#define UNWINDD_UNWINDER_SFRAME_TO_ROW_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "unwinder/cfi/row.h"
#include "unwinder/sframe/expr_arena.h"
#include "unwinder/sframe/fde.h"
#include "unwinder/sframe/fre.h"
#include "unwinder/sframe/header.h"

namespace unwindd::unwinder::sframe {

// `pc_lo`/`pc_hi`: the file addresses the FRE covers (Row::pc_lo/pc_hi).
// DataLoss for FREs whose words do not fit the interpretation (e.g. a flex
// CFA rule that is not register-based); Unimplemented for s390x.
absl::StatusOr<Row> FreToRow(const Header& header, const Fde& fde,
                             const Fre& fre, uint64_t pc_lo, uint64_t pc_hi,
                             ExprArena& arena);

}  // namespace unwindd::unwinder::sframe

#endif  // UNWINDD_UNWINDER_SFRAME_TO_ROW_H_
