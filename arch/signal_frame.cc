#include "arch/signal_frame.h"

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "arch/aarch64/signal_frame.h"
#include "arch/x86/signal_frame.h"
#include "arch/x86_64/signal_frame.h"

namespace unwindd::arch {

bool IsSigreturnTrampoline(Arch arch, memory::Memory& memory, uint64_t pc) {
  switch (arch) {
    case Arch::kX86_64:
      return x86_64::IsSigreturnTrampoline(memory, pc);
    case Arch::kX86:
      return x86::IsSigreturnTrampoline(memory, pc);
    case Arch::kAArch64:
      return aarch64::IsSigreturnTrampoline(memory, pc);
  }
  return false;
}

absl::StatusOr<RegisterSet> RestoreFromSigframe(memory::Memory& memory,
                                                const RegisterSet& regs) {
  if (!IsSigreturnTrampoline(regs.arch(), memory, regs.pc())) {
    return absl::NotFoundError(
        absl::StrFormat("0x%x is not a %s sigreturn trampoline", regs.pc(),
                        GetArchInfo(regs.arch()).name));
  }
  switch (regs.arch()) {
    case Arch::kX86_64:
      return x86_64::RestoreFromSigframe(memory, regs.sp());
    case Arch::kX86:
      return x86::RestoreFromSigframe(memory, regs);
    case Arch::kAArch64:
      return aarch64::RestoreFromSigframe(memory, regs.sp());
  }
  return absl::InternalError("unknown arch");
}

}  // namespace unwindd::arch
