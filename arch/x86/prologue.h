// The frame-pointer prologue check (arch/prologue.h) for x86_64 and i386:
// "push %bp ... mov %sp,%bp" before the PC, and no "ret" / "pop %bp" /
// "leave" just before an instruction pointer.
//
//   bool ok = x86::KeepsFramePointer(code, frame.Rebased(start), /*is64=*/true);
#ifndef UNWINDD_ARCH_X86_PROLOGUE_H_
#define UNWINDD_ARCH_X86_PROLOGUE_H_

#include <cstdint>

#include "absl/types/span.h"
#include "arch/frame_address.h"

namespace unwindd::arch::x86 {

// `is64`: x86_64's REX.W encodings of mov %rsp,%rbp, else i386's.
bool KeepsFramePointer(absl::Span<const uint8_t> code, FrameAddress at, bool is64);

}  // namespace unwindd::arch::x86

#endif  // UNWINDD_ARCH_X86_PROLOGUE_H_
