#include "arch/aarch64/pac.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "arch/le_bytes.h"

namespace unwindd::arch::aarch64 {

absl::StatusOr<PacMask> PacMaskFromUserPacMask(
    absl::Span<const uint8_t> bytes) {
  if (bytes.size() < kUserPacMaskSize) {
    return absl::DataLossError(absl::StrFormat(
        "user_pac_mask is %d bytes, got %d", kUserPacMaskSize, bytes.size()));
  }
  return PacMask{LoadLe64(bytes, 0), LoadLe64(bytes, 8)};
}

uint64_t NonAddressBits(int va_bits) {
  va_bits = std::clamp(va_bits, 32, 56);
  return ~((uint64_t{1} << va_bits) - 1);
}

uint64_t CodeAddressMask(const std::optional<PacMask>& pac) {
  if (pac.has_value() && pac->insn_mask != 0) {
    return pac->insn_mask | kTopByte;
  }
  return NonAddressBits(kDefaultVaBits);
}

uint64_t StripCode(uint64_t addr, uint64_t mask) {
  // Bit 55 is the range select bit: it survives signing, and says whether
  // the masked bits of the real address are all ones (TTBR1, the kernel) or
  // all zeros (TTBR0, user space). The mask never includes it.
  mask &= ~kRangeSelectBit;
  return (addr & kRangeSelectBit) ? (addr | mask) : (addr & ~mask);
}

}  // namespace unwindd::arch::aarch64
