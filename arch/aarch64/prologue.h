// The frame-pointer prologue check (arch/prologue.h) for aarch64:
// "stp x29, x30, [sp, ...]; [one insn;] add x29, sp, #n" before the PC, and
// no "ret" / "autiasp" / "ldp x29, x30" at or just before an exact PC.
//
//   bool ok = aarch64::KeepsFramePointer(code, pc - start, exact);
#ifndef UNWINDD_ARCH_AARCH64_PROLOGUE_H_
#define UNWINDD_ARCH_AARCH64_PROLOGUE_H_

#include <cstdint>

#include "absl/types/span.h"

namespace unwindd::arch::aarch64 {

bool KeepsFramePointer(absl::Span<const uint8_t> code, uint64_t pc_offset,
                       bool exact_pc);

}  // namespace unwindd::arch::aarch64

#endif  // UNWINDD_ARCH_AARCH64_PROLOGUE_H_
