// SFrame function descriptor entries (SFrame §2.3): which function an FDE
// covers and how its FREs are encoded, decoded from the v1 (17-byte), v2
// (20-byte) or v3 (16-byte index + 5-byte attributes) layout into one value.
//
//   absl::StatusOr<FdeRange> r = ReadFdeRange(bytes, header, vaddr, i);
//   absl::StatusOr<Fde> fde = ReadFde(bytes, header, vaddr, i);
//
// Function addresses are in the *file's* address space: `section_vaddr` is
// the .sframe section's sh_addr (or PT_GNU_SFRAME's p_vaddr).
#ifndef UNWINDD_UNWINDER_SFRAME_FDE_H_
#define UNWINDD_UNWINDER_SFRAME_FDE_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "unwinder/sframe/header.h"

namespace unwindd::unwinder::sframe {

// Just what a binary search needs: the function's [start, end).
struct FdeRange {
  uint64_t start = 0;
  uint64_t end = 0;
};

struct Fde {
  uint32_t index = 0;
  uint64_t func_start = 0;  // file address
  uint32_t func_size = 0;
  uint64_t fres_offset = 0;  // section offset of the first FRE
  uint32_t num_fres = 0;
  uint8_t fre_type = kFreTypeAddr1;
  uint8_t pc_type = kPcTypeInc;
  uint8_t fde_type = kFdeTypeDefault;  // v3 info2; default before v3
  uint8_t rep_size = 0;                // PCMASK block size
  bool pauth_key_b = false;            // aarch64: RA signed with key B
  bool signal_frame = false;           // v3: a signal trampoline

  uint64_t func_end() const { return func_start + func_size; }
};

// DataLoss if `index` is not below num_fdes, or the function's range wraps.
absl::StatusOr<FdeRange> ReadFdeRange(absl::Span<const uint8_t> section,
                                      const Header& header,
                                      uint64_t section_vaddr, uint32_t index);

// Also DataLoss for an FRE type other than ADDR1/2/4, a PCMASK FDE without
// a block size, or (v3) attributes outside the FRE sub-section.
absl::StatusOr<Fde> ReadFde(absl::Span<const uint8_t> section,
                            const Header& header, uint64_t section_vaddr,
                            uint32_t index);

}  // namespace unwindd::unwinder::sframe

#endif  // UNWINDD_UNWINDER_SFRAME_FDE_H_
