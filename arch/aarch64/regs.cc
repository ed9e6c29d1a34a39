#include "arch/aarch64/regs.h"

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "arch/arch.h"
#include "arch/le_bytes.h"

namespace unwindd::arch::aarch64 {

absl::StatusOr<RegisterSet> RegistersFromUserPtRegs(
    absl::Span<const uint8_t> bytes) {
  if (bytes.size() < kUserPtRegsSize) {
    return absl::DataLossError(
        absl::StrFormat("aarch64 user_pt_regs is %d bytes, got %d",
                        kUserPtRegsSize, bytes.size()));
  }
  RegisterSet regs(Arch::kAArch64);
  // regs[i] is x<i>, DWARF number i.
  for (int reg = 0; reg <= kLr; ++reg) {
    regs.Set(reg, LoadLe64(bytes, static_cast<size_t>(reg) * 8));
  }
  regs.Set(kSp, LoadLe64(bytes, kSpOffset));
  regs.Set(kPc, LoadLe64(bytes, kPcOffset));
  return regs;
}

}  // namespace unwindd::arch::aarch64
