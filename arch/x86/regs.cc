#include "arch/x86/regs.h"

#include <array>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "arch/arch.h"
#include "arch/le_bytes.h"

namespace unwindd::arch::x86 {
namespace {

// Where each DWARF register lives in user_regs_struct, indexed by DWARF
// number.
constexpr std::array<size_t, 9> kDwarfToOffset = {
    kUserEax, kUserEcx, kUserEdx, kUserEbx, kUserEsp,
    kUserEbp, kUserEsi, kUserEdi, kUserEip,
};

}  // namespace

absl::StatusOr<RegisterSet> RegistersFromUserRegs(
    absl::Span<const uint8_t> bytes) {
  if (bytes.size() < kUserRegsSize) {
    return absl::DataLossError(
        absl::StrFormat("i386 user_regs_struct is %d bytes, got %d",
                        kUserRegsSize, bytes.size()));
  }
  RegisterSet regs(Arch::kX86);
  for (size_t reg = 0; reg < kDwarfToOffset.size(); ++reg) {
    regs.Set(static_cast<int>(reg), LoadLe32(bytes, kDwarfToOffset[reg]));
  }
  return regs;
}

}  // namespace unwindd::arch::x86
