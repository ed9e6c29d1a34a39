// Kernel signal frames for any target architecture: recognising the
// sigreturn trampoline by its code bytes and restoring the interrupted
// registers from the frame the kernel pushed. The step loop calls these
// without knowing the arch; each arch's layout is in arch/<arch>/
// signal_frame.h.
//
//   if (IsSigreturnTrampoline(regs.arch(), code, frame)) {
//     absl::StatusOr<RegisterSet> caller = RestoreFromSigframe(code, mem, regs, frame);
//   }
//
// The restored PC is the exact interrupted PC (not a return address).
// Addresses are in the target's address space.
#ifndef UNWINDD_ARCH_SIGNAL_FRAME_H_
#define UNWINDD_ARCH_SIGNAL_FRAME_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "arch/arch.h"
#include "arch/frame_address.h"
#include "arch/register_set.h"
#include "memory/memory.h"

namespace unwindd::arch {

// True if the frame at `at` is in one of `arch`'s sigreturn trampolines: at
// its first instruction, or at one reached before the sigreturn system call
// completes (each arch says which in arch/<arch>/signal_frame.h).
bool IsSigreturnTrampoline(Arch arch, memory::Memory& code, FrameAddress at);

// `regs` are the registers at the trampoline (regs.arch() says which
// layout). NotFound if regs.pc() is not a trampoline; OutOfRange if the
// signal frame is unreadable.
// `code` holds the trampoline's instructions (e.g. the module's file image),
// `stack` the signal frame (target memory).
// `at` is the frame's address (regs.pc() and its kind).
absl::StatusOr<RegisterSet> RestoreFromSigframe(memory::Memory& code,
                                                memory::Memory& stack,
                                                const RegisterSet& regs,
                                                FrameAddress at);

}  // namespace unwindd::arch

#endif  // UNWINDD_ARCH_SIGNAL_FRAME_H_
