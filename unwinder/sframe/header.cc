#include "unwinder/sframe/header.h"

#include "absl/strings/str_format.h"
#include "arch/arch_ops.h"
#include "unwinder/sframe/cursor.h"

namespace unwindd::unwinder::sframe {
namespace {

// §2.1.1: the magic reads 0xdee2 in the section's own byte order.
absl::StatusOr<bool> DetectBigEndian(absl::Span<const uint8_t> s) {
  if (s.size() < kHeaderSize) {
    return absl::DataLossError(absl::StrFormat(
        "SFrame section is %u bytes, shorter than the %u-byte header", s.size(),
        kHeaderSize));
  }
  if (s[0] == (kMagic & 0xff) && s[1] == (kMagic >> 8)) return false;
  if (s[0] == (kMagic >> 8) && s[1] == (kMagic & 0xff)) return true;
  return absl::DataLossError(absl::StrFormat(
      "bad SFrame magic 0x%02x%02x at offset 0 (want 0xdee2 in either byte "
      "order)",
      s[1], s[0]));
}

uint64_t FdeSize(uint8_t version) {
  switch (version) {
    case kVersion1:
      return kFdeSizeV1;
    case kVersion2:
      return kFdeSizeV2;
    default:
      return kFdeIndexSizeV3;
  }
}

// §2.2: the FDE array and the FRE sub-section must both fit, in that order.
absl::Status CheckLayout(const Header& h, uint64_t section_size) {
  const uint64_t fde_bytes = uint64_t{h.num_fdes} * h.fde_size;
  const uint64_t fde_end = h.fde_start + fde_bytes;
  if (h.header_size > section_size || fde_end > section_size) {
    return absl::DataLossError(absl::StrFormat(
        "SFrame: %u FDEs of %u bytes at offset 0x%x run past the end of the "
        "%u-byte section",
        h.num_fdes, h.fde_size, h.fde_start, section_size));
  }
  if (h.fre_end > section_size) {
    return absl::DataLossError(absl::StrFormat(
        "SFrame: FRE sub-section [0x%x, 0x%x) runs past the end of the "
        "%u-byte section",
        h.fre_start, h.fre_end, section_size));
  }
  if (fde_end > h.fre_start) {
    return absl::DataLossError(absl::StrFormat(
        "SFrame: FDE sub-section [0x%x, 0x%x) overlaps the FRE sub-section at "
        "0x%x",
        h.fde_start, fde_end, h.fre_start));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Header> ParseHeader(absl::Span<const uint8_t> section) {
  absl::StatusOr<bool> big = DetectBigEndian(section);
  if (!big.ok()) return big.status();
  Header h;
  h.big_endian = *big;
  Cursor c(section, h.big_endian);
  // The header is 28 bytes and the section has at least that many (checked
  // above), so none of these reads can fail.
  (void)c.Seek(2);
  h.version = *c.U8();
  h.flags = *c.U8();
  if (h.version < kVersion1 || h.version > kVersion3) {
    return absl::UnimplementedError(absl::StrFormat(
        "SFrame version %d is not supported (1-3 are)", h.version));
  }
  h.abi = *c.U8();
  h.cfa_fixed_fp_offset = *c.S8();
  h.cfa_fixed_ra_offset = *c.S8();
  h.auxhdr_len = *c.U8();
  h.num_fdes = *c.U32();
  h.num_fres = *c.U32();
  h.fre_len = *c.U32();
  h.fdeoff = *c.U32();
  h.freoff = *c.U32();

  // All of these are sums of at most three 32-bit values: no overflow in 64.
  h.header_size = kHeaderSize + h.auxhdr_len;
  h.fde_size = FdeSize(h.version);
  h.fde_start = h.header_size + h.fdeoff;
  h.fre_start = h.header_size + h.freoff;
  h.fre_end = h.fre_start + h.fre_len;
  absl::Status layout = CheckLayout(h, section.size());
  if (!layout.ok()) return layout;
  return h;
}

absl::StatusOr<arch::Arch> ArchOfAbi(uint8_t abi) {
  // Each arch lists the identifiers that describe it (ArchOps::sframe_abis).
  for (const arch::ArchOps* ops : arch::AllArchOps()) {
    for (uint8_t a : ops->sframe_abis) {
      if (a == abi) return ops->info.arch;
    }
  }
  if (abi == kAbiS390xBigEndian) {
    return absl::UnimplementedError("SFrame for s390x is not supported");
  }
  return absl::UnimplementedError(
      absl::StrFormat("unknown SFrame ABI/arch identifier %d", abi));
}

}  // namespace unwindd::unwinder::sframe
