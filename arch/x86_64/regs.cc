#include "arch/x86_64/regs.h"

#include <array>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "arch/arch.h"

namespace unwindd::arch::x86_64 {
namespace {

// Where each DWARF register (x86_64 psABI §3.6.2, fig. 3.36) lives in
// user_regs_struct, indexed by DWARF number.
constexpr std::array<size_t, 17> kDwarfToOffset = {
    kRax, kRdx, kRcx, kRbx, kRsi, kRdi, kRbp, kRsp,  // 0-7
    kR8,  kR9,  kR10, kR11, kR12, kR13, kR14, kR15,  // 8-15
    kRip,                                            // 16: the PC slot
};

// The bytes are the target's (little-endian), whatever the host is.
uint64_t LoadLe64(absl::Span<const uint8_t> bytes, size_t offset) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | bytes[offset + i];
  return v;
}

}  // namespace

absl::StatusOr<RegisterSet> RegistersFromUserRegs(
    absl::Span<const uint8_t> bytes) {
  if (bytes.size() < kUserRegsSize) {
    return absl::DataLossError(
        absl::StrFormat("x86_64 user_regs_struct is %d bytes, got %d",
                        kUserRegsSize, bytes.size()));
  }
  RegisterSet regs(Arch::kX86_64);
  for (size_t reg = 0; reg < kDwarfToOffset.size(); ++reg) {
    regs.Set(static_cast<int>(reg), LoadLe64(bytes, kDwarfToOffset[reg]));
  }
  return regs;
}

}  // namespace unwindd::arch::x86_64
