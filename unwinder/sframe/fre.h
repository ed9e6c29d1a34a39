// SFrame frame row entries (SFrame §2.4): a start offset of 1, 2 or 4 bytes
// (the FDE's FRE type), an info byte, then N data words of 1, 2 or 4 bytes.
//
//   absl::StatusOr<Fre> fre = ReadFre(bytes, offset, fde.fre_type, header);
//   int32_t cfa_offset = fre->Signed(0);
//
// Data words are kept raw; what they mean (CFA/RA/FP offsets, or v3 flex
// control words) is decided per ABI by to_row.h.
#ifndef UNWINDD_UNWINDER_SFRAME_FRE_H_
#define UNWINDD_UNWINDER_SFRAME_FRE_H_

#include <array>
#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "unwinder/sframe/format.h"
#include "unwinder/sframe/header.h"

namespace unwindd::unwinder::sframe {

struct Fre {
  uint32_t start = 0;        // offset from the function (or block) start
  bool cfa_base_sp = false;  // info bit 0: CFA is SP-based (else FP-based)
  uint8_t num_words = 0;     // info bits 1-4
  uint8_t word_size = 1;     // bytes: 1, 2 or 4 (info bits 5-6)
  bool mangled_ra = false;   // info bit 7 (aarch64: RA is PAC-signed)
  std::array<uint32_t, kMaxDataWords> words{};  // raw, zero-extended
  uint64_t encoded_size = 0;  // bytes this FRE occupies in the section

  // Data word `i` sign-extended from word_size bytes (offsets are signed);
  // 0 if i >= num_words.
  int32_t Signed(int i) const;
  // Data word `i` as stored (flex control words are unsigned).
  uint32_t Unsigned(int i) const { return i < num_words ? words[i] : 0; }
  // v2 errata 1 / v3: an FRE without data words marks the outermost frame.
  bool ra_undefined() const { return num_words == 0; }
};

// Reads the FRE at section offset `offset`, which must lie, with all its
// data words, inside the header's FRE sub-section: DataLoss otherwise, or
// for the reserved data word size 3.
absl::StatusOr<Fre> ReadFre(absl::Span<const uint8_t> section, uint64_t offset,
                            uint8_t fre_type, const Header& header);

}  // namespace unwindd::unwinder::sframe

#endif  // UNWINDD_UNWINDER_SFRAME_FRE_H_
