// i386 signal frames: recognising the sigreturn / rt_sigreturn trampolines
// and reading the registers the kernel saved in the signal frame.
//
// Layouts (arch/x86/include/asm/sigframe.h, uapi/asm/sigcontext.h,
// asm/ia32.h / uapi/asm/ucontext.h; the same as gdb's i386-linux-tdep.c):
//
//   struct sigframe_ia32 { u32 pretcode; int sig;
//                          struct sigcontext_32 sc; ... };
//   struct rt_sigframe_ia32 { u32 pretcode; int sig; u32 pinfo; u32 puc;
//                             siginfo_t info (128); struct ucontext_ia32 uc;
//                             ... };
//   struct ucontext_ia32 { u32 uc_flags; u32 uc_link; stack_ia32_t uc_stack
//                          (12); struct sigcontext_32 uc_mcontext; } // at 20
//   struct sigcontext_32 { u16 gs, __gsh, fs, __fsh, es, __esh, ds, __dsh;
//                          u32 di, si, bp, sp, bx, dx, cx, ax, trapno, err,
//                          ip, ... };
//
// The handler's `ret` pops pretcode, so at the trampoline sp points at `sig`.
// Trampolines (the 32-bit vDSO's __kernel_sigreturn / __kernel_rt_sigreturn;
// glibc's own restore / restore_rt without a vDSO):
//   sigreturn:    pop %eax; mov $119, %eax; int $0x80  = 58 b8 77 00 00 00 cd 80
//   rt_sigreturn: mov $173, %eax; int $0x80            = b8 ad 00 00 00 cd 80
// The vDSO's own CFI for them (hand-written DWARF expressions) usually
// suffices; these are for when it does not, and for stops inside them.
//
// Addresses are in the target's address space.
#ifndef UNWINDD_ARCH_X86_SIGNAL_FRAME_H_
#define UNWINDD_ARCH_X86_SIGNAL_FRAME_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "arch/register_set.h"
#include "memory/memory.h"

namespace unwindd::arch::x86 {

enum class TrampolineKind { kNone, kSigreturn, kRtSigreturn };

struct Trampoline {
  TrampolineKind kind = TrampolineKind::kNone;
  // Bytes from the trampoline's start to pc: an instruction boundary.
  int offset = 0;
};

// Which trampoline, if any, `pc` is at (at any of its instructions).
Trampoline FindTrampoline(memory::Memory& memory, uint64_t pc);

inline bool IsSigreturnTrampoline(memory::Memory& memory, uint64_t pc) {
  return FindTrampoline(memory, pc).kind != TrampolineKind::kNone;
}

// Offset of uc_mcontext in ucontext_ia32.
inline constexpr uint32_t kUcMcontextOffset = 20;

// Registers at the trampoline -> the interrupted registers (DWARF 0-8), with
// the trampoline's bytes read from `code` and its frame from `stack`.
// NotFound if pc is not a trampoline; OutOfRange if the frame is unreadable.
absl::StatusOr<RegisterSet> RestoreFromSigframe(memory::Memory& code,
                                                memory::Memory& stack,
                                                const RegisterSet& regs);

}  // namespace unwindd::arch::x86

#endif  // UNWINDD_ARCH_X86_SIGNAL_FRAME_H_
