#include "arch/aarch64/signal_frame.h"

#include <array>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "arch/aarch64/regs.h"
#include "arch/le_bytes.h"

namespace unwindd::arch::aarch64 {
namespace {

bool CodeAt(memory::Memory& memory, uint64_t pc) {
  absl::StatusOr<uint32_t> first = memory.ReadU32(pc);
  if (!first.ok() || *first != kMovX8Rt) return false;
  if (pc > UINT64_MAX - 4) return false;
  absl::StatusOr<uint32_t> second = memory.ReadU32(pc + 4);
  return second.ok() && *second == kSvc0;
}

}  // namespace

bool IsSigreturnTrampoline(memory::Memory& memory, uint64_t pc) {
  // pc at `mov`: the handler has just returned into the trampoline; pc at
  // `svc`: stopped between the two instructions.
  return CodeAt(memory, pc) || (pc >= 4 && CodeAt(memory, pc - 4));
}

absl::StatusOr<RegisterSet> RestoreFromSigframe(memory::Memory& memory,
                                                uint64_t sp) {
  // sigcontext.regs[0] .. pc: 31 + 2 words after fault_address.
  std::array<uint8_t, 33 * 8> raw;
  constexpr uint64_t kRegsOffset = kSigcontextOffset + 8;
  if (sp > UINT64_MAX - kRegsOffset - raw.size()) {
    return absl::OutOfRangeError(
        absl::StrFormat("aarch64 signal frame at 0x%x wraps", sp));
  }
  absl::Status s = memory.ReadFully(sp + kRegsOffset, absl::MakeSpan(raw));
  if (!s.ok()) return s;
  RegisterSet regs(Arch::kAArch64);
  for (int reg = 0; reg <= kLr; ++reg) {
    regs.Set(reg, LoadLe64(raw, static_cast<size_t>(reg) * 8));
  }
  regs.Set(kSp, LoadLe64(raw, 31 * 8));
  regs.Set(kPc, LoadLe64(raw, 32 * 8));
  return regs;
}

}  // namespace unwindd::arch::aarch64
