// aarch64 signal frames: recognising the rt_sigreturn trampoline and reading
// the registers the kernel saved in the rt_sigframe.
//
// Layouts (arch/arm64/kernel/signal.c, uapi/asm/sigcontext.h,
// uapi/asm/ucontext.h; the same offsets gdb's aarch64-linux-tdep.c and
// libgcc's aarch64 linux-unwind.h use):
//
//   struct rt_sigframe { siginfo_t info;            //   0, 128 bytes
//                        struct ucontext uc; };     // 128
//   struct ucontext { u64 uc_flags; ucontext* uc_link; stack_t uc_stack (24);
//                     sigset_t uc_sigmask (8); u8 unused[120];
//                     struct sigcontext uc_mcontext; }  // at 176 (16-aligned)
//   struct sigcontext { u64 fault_address; u64 regs[31]; u64 sp; u64 pc;
//                       u64 pstate; ... }
//
// The kernel's trampoline (vDSO __kernel_rt_sigreturn, or qemu-user's
// sigtramp page) is `mov x8, #139 (__NR_rt_sigreturn); svc #0`. Its CFI in
// the vDSO only restores x29/x30 from the frame record the kernel pushes
// (so the interrupted PC would be skipped), which is why, like gdb's
// tramp-frame sniffer and libgcc's MD_FALLBACK_FRAME_STATE_FOR, the step
// loop recognises these bytes before it looks at CFI.
//
//   if (IsSigreturnTrampoline(mem, pc)) regs = *RestoreFromSigframe(mem, sp);
//
// Addresses are in the target's address space.
#ifndef UNWINDD_ARCH_AARCH64_SIGNAL_FRAME_H_
#define UNWINDD_ARCH_AARCH64_SIGNAL_FRAME_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "arch/register_set.h"
#include "memory/memory.h"

namespace unwindd::arch::aarch64 {

inline constexpr uint32_t kMovX8Rt = 0xd2801168;  // mov x8, #139
inline constexpr uint32_t kSvc0 = 0xd4000001;      // svc #0

// Offset of uc_mcontext (struct sigcontext) from the rt_sigframe.
inline constexpr uint64_t kSigcontextOffset = 128 + 176;

// True if `pc` is the first or the second instruction of the trampoline.
bool IsSigreturnTrampoline(memory::Memory& memory, uint64_t pc);

// `sp` is the stack pointer at the trampoline: the handler returned with
// its entry sp, which the kernel set to the rt_sigframe. Restores x0-x30,
// sp and pc. OutOfRange if the frame is unreadable or wraps.
absl::StatusOr<RegisterSet> RestoreFromSigframe(memory::Memory& memory,
                                                uint64_t sp);

}  // namespace unwindd::arch::aarch64

#endif  // UNWINDD_ARCH_AARCH64_SIGNAL_FRAME_H_
