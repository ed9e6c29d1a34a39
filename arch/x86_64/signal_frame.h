// x86_64 signal frames: recognising the rt_sigreturn trampoline and reading
// the registers the kernel saved in the rt_sigframe (arch/x86/include/asm/
// sigframe.h, uapi/asm/sigcontext.h).
//
// Used when the trampoline has no CFI of its own (glibc's __restore_rt has
// 'S'-augmented CFI that does the same through DWARF expressions; musl's and
// hand-rolled restorers do not).
//
//   if (IsSigreturnTrampoline(mem, frame)) regs = *RestoreFromSigframe(mem, sp);
//
// Addresses are in the target's address space.
#ifndef UNWINDD_ARCH_X86_64_SIGNAL_FRAME_H_
#define UNWINDD_ARCH_X86_64_SIGNAL_FRAME_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "arch/frame_address.h"
#include "arch/register_set.h"
#include "memory/memory.h"

namespace unwindd::arch::x86_64 {

// `mov $__NR_rt_sigreturn(15), %rax; syscall` — what glibc, musl and the
// kernel's own restorers all start with.
// At `mov $15,%rax` or `syscall`; for an instruction pointer (frame 0)
// also right after the syscall, where a sample taken while the kernel runs
// rt_sigreturn finds the thread (sp still at the frame).
bool IsSigreturnTrampoline(memory::Memory& memory, FrameAddress at);

// `sp` is the stack pointer at the trampoline: the handler's `ret` popped
// rt_sigframe::pretcode, so sp points at the ucontext. OutOfRange if the
// frame is unreadable.
absl::StatusOr<RegisterSet> RestoreFromSigframe(memory::Memory& memory,
                                                uint64_t sp);

}  // namespace unwindd::arch::x86_64

#endif  // UNWINDD_ARCH_X86_64_SIGNAL_FRAME_H_
