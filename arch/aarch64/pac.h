// aarch64 pointer authentication (PAC): which bits of a code address are
// not address bits, and how to remove them.
//
// With -mbranch-protection=pac-ret a function signs x30 (paciasp) before
// saving it, so the return address read from the stack carries a PAC in its
// top bits; CFI marks this with DW_CFA_AARCH64_negate_ra_state (Row::
// ra_signed). The kernel tells a debugger which bits hold the PAC through
// the NT_ARM_PAC_MASK regset (ptrace) / core note: struct user_pac_mask
// { __u64 data_mask; __u64 insn_mask; } (arch/arm64/include/uapi/asm/
// ptrace.h), both GENMASK(54, VA_BITS) for user space.
//
//   uint64_t mask = CodeAddressMask(pac);         // pac: optional PacMask
//   uint64_t pc = StripCode(signed_ra, mask);
//
// Like gdb's aarch64_remove_non_address_bits, the mask always includes the
// top byte (TBI for data pointers, more PAC bits for instruction pointers),
// and bit 55 selects the range: a pointer with bit 55 set (kernel half) gets
// the masked bits set, any other gets them cleared.
#ifndef UNWINDD_ARCH_AARCH64_PAC_H_
#define UNWINDD_ARCH_AARCH64_PAC_H_

#include <cstdint>
#include <optional>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "arch/pac_mask.h"

namespace unwindd::arch::aarch64 {

// NT_ARM_PAC_MASK (include/uapi/linux/elf.h): the regset / core note type.
inline constexpr uint32_t kNtArmPacMask = 0x406;
inline constexpr size_t kUserPacMaskSize = 16;

// Virtual address bits of a Linux aarch64 user address space when nothing
// says otherwise (4K or 64K pages with 48-bit VA; 52-bit VA is opt-in).
inline constexpr int kDefaultVaBits = 48;
inline constexpr uint64_t kTopByte = 0xff00000000000000;
inline constexpr uint64_t kRangeSelectBit = uint64_t{1} << 55;

// struct user_pac_mask bytes (little-endian) -> PacMask. DataLoss if short.
absl::StatusOr<PacMask> PacMaskFromUserPacMask(absl::Span<const uint8_t> bytes);

// Every bit from `va_bits` up: GENMASK(63, va_bits). va_bits outside
// [32, 56] is clamped (no aarch64 Linux configuration is outside it).
uint64_t NonAddressBits(int va_bits);

// The bits to strip from a code address: insn_mask plus the top byte when
// the target told us the mask, else NonAddressBits(kDefaultVaBits).
uint64_t CodeAddressMask(const std::optional<PacMask>& pac);

// Removes the non-address bits in `mask` from `addr` (see above).
uint64_t StripCode(uint64_t addr, uint64_t mask);

}  // namespace unwindd::arch::aarch64

#endif  // UNWINDD_ARCH_AARCH64_PAC_H_
