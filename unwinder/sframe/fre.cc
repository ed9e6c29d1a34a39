#include "unwinder/sframe/fre.h"

#include "absl/strings/str_format.h"
#include "unwinder/sframe/cursor.h"

namespace unwindd::unwinder::sframe {
namespace {

// §2.3.1: ADDR1/ADDR2/ADDR4 start offsets.
int StartSize(uint8_t fre_type) {
  switch (fre_type) {
    case kFreTypeAddr1:
      return 1;
    case kFreTypeAddr2:
      return 2;
    default:
      return 4;
  }
}

// §2.4.1: data word size codes.
absl::StatusOr<uint8_t> WordSize(uint8_t code, uint64_t offset) {
  switch (code) {
    case kDataWord1B:
      return 1;
    case kDataWord2B:
      return 2;
    case kDataWord4B:
      return 4;
  }
  return absl::DataLossError(absl::StrFormat(
      "SFrame FRE at offset 0x%x: reserved data word size code %d", offset,
      code));
}

}  // namespace

int32_t Fre::Signed(int i) const {
  if (i < 0 || i >= num_words) return 0;
  const uint32_t bits = 8 * word_size;
  if (bits >= 32) return static_cast<int32_t>(words[i]);
  const uint32_t sign = uint32_t{1} << (bits - 1);
  return static_cast<int32_t>((words[i] ^ sign) - sign);
}

absl::StatusOr<Fre> ReadFre(absl::Span<const uint8_t> section, uint64_t offset,
                            uint8_t fre_type, const Header& header) {
  if (offset < header.fre_start || offset >= header.fre_end) {
    return absl::DataLossError(absl::StrFormat(
        "SFrame FRE offset 0x%x is outside the FRE sub-section [0x%x, 0x%x)",
        offset, header.fre_start, header.fre_end));
  }
  // Reads are confined to the FRE sub-section, not just the section.
  absl::Span<const uint8_t> fres = section.subspan(0, header.fre_end);
  Cursor c(fres, header.big_endian);
  (void)c.Seek(offset);
  absl::StatusOr<uint64_t> start = c.Unsigned(StartSize(fre_type));
  if (!start.ok()) return start.status();
  absl::StatusOr<uint8_t> info = c.U8();
  if (!info.ok()) return info.status();

  Fre fre;
  fre.start = static_cast<uint32_t>(*start);
  fre.cfa_base_sp = (*info & 1) != 0;
  fre.num_words = (*info >> 1) & 0xf;
  fre.mangled_ra = (*info >> 7) != 0;
  absl::StatusOr<uint8_t> size = WordSize((*info >> 5) & 3, offset);
  if (!size.ok()) return size.status();
  fre.word_size = *size;
  for (int i = 0; i < fre.num_words; ++i) {
    absl::StatusOr<uint64_t> w = c.Unsigned(fre.word_size);
    if (!w.ok()) {
      return absl::DataLossError(absl::StrFormat(
          "SFrame FRE at offset 0x%x: data word %d of %d runs past the FRE "
          "sub-section end 0x%x",
          offset, i, fre.num_words, header.fre_end));
    }
    fre.words[i] = static_cast<uint32_t>(*w);
  }
  fre.encoded_size = c.offset() - offset;
  return fre;
}

}  // namespace unwindd::unwinder::sframe
