// The SFrame preamble and header (SFrame §2.1, §2.2): version, flags, ABI,
// fixed CFA offsets, and where the FDE and FRE sub-sections are.
//
//   absl::StatusOr<Header> h = ParseHeader(section_bytes);
//   if (h->sorted()) ... binary search the FDEs
//
// ParseHeader checks that both sub-sections lie inside the section (so FDE
// counts that run past the end are rejected here, once); it does not look
// at the FDEs or FREs themselves.
#ifndef UNWINDD_UNWINDER_SFRAME_HEADER_H_
#define UNWINDD_UNWINDER_SFRAME_HEADER_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "arch/arch.h"
#include "unwinder/sframe/format.h"

namespace unwindd::unwinder::sframe {

struct Header {
  uint8_t version = 0;
  uint8_t flags = 0;
  uint8_t abi = 0;
  int8_t cfa_fixed_fp_offset = 0;  // 0: not fixed (FREs carry it, if any)
  int8_t cfa_fixed_ra_offset = 0;  // 0: not fixed (AMD64 sets -8)
  uint8_t auxhdr_len = 0;
  uint32_t num_fdes = 0;
  uint32_t num_fres = 0;
  uint32_t fre_len = 0;
  uint32_t fdeoff = 0;
  uint32_t freoff = 0;
  bool big_endian = false;  // from the magic (§2.1.1)

  // Derived, as section offsets.
  uint64_t header_size = 0;  // 28 + auxhdr_len
  uint64_t fde_start = 0;    // first FDE
  uint64_t fde_size = 0;     // bytes per FDE (index entry in v3)
  uint64_t fre_start = 0;    // FRE sub-section
  uint64_t fre_end = 0;      // fre_start + fre_len

  bool sorted() const { return (flags & kFlagFdeSorted) != 0; }
  // SFRAME_F_FRAME_POINTER exists in v1 and v2 only (v3 removed it).
  bool frame_pointer() const {
    return version < kVersion3 && (flags & kFlagFramePointer) != 0;
  }
  bool func_start_pcrel() const {
    return version >= kVersion2 && (flags & kFlagFuncStartPcRel) != 0;
  }
};

// DataLoss for a bad magic, a truncated header or sub-sections outside the
// section; Unimplemented for versions other than 1-3.
absl::StatusOr<Header> ParseHeader(absl::Span<const uint8_t> section);

// The architecture an ABI/arch identifier (§2.2.1) describes. Unimplemented
// for s390x (not a target of this unwinder) and unknown identifiers.
absl::StatusOr<arch::Arch> ArchOfAbi(uint8_t abi);

}  // namespace unwindd::unwinder::sframe

#endif  // UNWINDD_UNWINDER_SFRAME_HEADER_H_
