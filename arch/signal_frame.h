// Kernel signal frames for any target architecture: recognising the
// sigreturn trampoline by its code bytes and restoring the interrupted
// registers from the frame the kernel pushed. The step loop calls these
// without knowing the arch; each arch's layout is in arch/<arch>/
// signal_frame.h.
//
//   if (IsSigreturnTrampoline(regs.arch(), mem, regs.pc())) {
//     absl::StatusOr<RegisterSet> caller = RestoreFromSigframe(mem, mem, regs);
//   }
//
// The restored PC is the exact interrupted PC (not a return address).
// Addresses are in the target's address space.
#ifndef UNWINDD_ARCH_SIGNAL_FRAME_H_
#define UNWINDD_ARCH_SIGNAL_FRAME_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "arch/arch.h"
#include "arch/register_set.h"
#include "memory/memory.h"

namespace unwindd::arch {

// True if `pc` is at an instruction of one of `arch`'s sigreturn
// trampolines (the first, or one reached before the sigreturn system call
// completes: each arch says which in arch/<arch>/signal_frame.h).
bool IsSigreturnTrampoline(Arch arch, memory::Memory& memory, uint64_t pc);

// `regs` are the registers at the trampoline (regs.arch() says which
// layout). NotFound if regs.pc() is not a trampoline; OutOfRange if the
// signal frame is unreadable.
// `code` holds the trampoline's instructions (e.g. the module's file image),
// `stack` the signal frame (target memory).
absl::StatusOr<RegisterSet> RestoreFromSigframe(memory::Memory& code,
                                                memory::Memory& stack,
                                                const RegisterSet& regs);

}  // namespace unwindd::arch

#endif  // UNWINDD_ARCH_SIGNAL_FRAME_H_
