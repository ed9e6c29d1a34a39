#include "arch/signal_frame.h"

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "arch/arch_ops.h"

namespace unwindd::arch {

bool IsSigreturnTrampoline(Arch arch, memory::Memory& code, FrameAddress at) {
  return GetArchOps(arch).is_sigreturn_trampoline(code, at);
}

absl::StatusOr<RegisterSet> RestoreFromSigframe(memory::Memory& code,
                                                memory::Memory& stack,
                                                const RegisterSet& regs,
                                                FrameAddress at) {
  const ArchOps& ops = GetArchOps(regs.arch());
  if (!ops.is_sigreturn_trampoline(code, at)) {
    return absl::NotFoundError(absl::StrFormat(
        "0x%x is not a %s sigreturn trampoline", regs.pc(), ops.info.name));
  }
  return ops.restore_from_sigframe(code, stack, regs);
}

}  // namespace unwindd::arch
