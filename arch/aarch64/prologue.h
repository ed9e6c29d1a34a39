// The frame-pointer prologue check (arch/prologue.h) for aarch64:
// "stp x29, x30, [sp, ...]; [one insn;] add x29, sp, #n" before the PC, and
// no "ret" / "autiasp" / "ldp x29, x30" at or just before an instruction
// pointer.
//
//   bool ok = aarch64::KeepsFramePointer(code, frame.Rebased(start));
#ifndef UNWINDD_ARCH_AARCH64_PROLOGUE_H_
#define UNWINDD_ARCH_AARCH64_PROLOGUE_H_

#include <cstdint>

#include "absl/types/span.h"
#include "arch/frame_address.h"

namespace unwindd::arch::aarch64 {

bool KeepsFramePointer(absl::Span<const uint8_t> code, FrameAddress at);

}  // namespace unwindd::arch::aarch64

#endif  // UNWINDD_ARCH_AARCH64_PROLOGUE_H_
