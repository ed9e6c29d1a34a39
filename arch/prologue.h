// Whether a function keeps a frame pointer at a given PC, from its code
// bytes: the check that lets the frame-pointer source answer for the
// program's own -fno-omit-frame-pointer functions while declining libc's
// (built without frame pointers, where the chain would skip or invent
// frames).
//
//   absl::Span<const uint8_t> code = bytes of the function, from its start;
//   bool ok = KeepsFramePointer(Arch::kX86_64, code, frame.Rebased(start));
//
// Each arch scans its own instructions (ArchOps::keeps_frame_pointer):
// arch/x86/prologue.h for x86_64 and i386, arch/aarch64/prologue.h.
//
// A function keeps one at an address when, somewhere before it, it saved
// the caller's frame pointer and pointed its own at the record:
//   x86_64: push %rbp ... mov %rsp,%rbp     (push at most 32 bytes before)
//   i386:   push %ebp ... mov %esp,%ebp
//   aarch64: stp x29, x30, [sp, ...]; [one insn;] add x29, sp, #n
// Searched for, not required at the entry: gcc -O2 shrink-wraps (an early
// exit before the prologue) and schedules other instructions into it even
// with -fno-omit-frame-pointer. For an instruction pointer (frame 0, or
// after a signal) the epilogue matters too: at a `ret`, or right after the
// frame pointer was restored (pop %rbp / leave / ldp x29, x30), the record
// is gone; a return address is always inside a call. A wrong
// "yes" is caught by the stack checks of frame_pointer.h; a wrong "no" only
// hands the frame to the next source.
#ifndef UNWINDD_ARCH_PROLOGUE_H_
#define UNWINDD_ARCH_PROLOGUE_H_

#include <cstdint>

#include "absl/types/span.h"
#include "arch/arch.h"
#include "arch/frame_address.h"

namespace unwindd::arch {

// `code`: the function's bytes from its first instruction (may be cut short:
// then only what is there is examined). `at`: the frame's address relative
// to the function's start.
bool KeepsFramePointer(Arch arch, absl::Span<const uint8_t> code, FrameAddress at);

}  // namespace unwindd::arch

#endif  // UNWINDD_ARCH_PROLOGUE_H_
