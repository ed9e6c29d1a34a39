#include "unwinder/cfi/eh_frame_hdr.h"

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/types/span.h"
#include "memory/byte_reader.h"
#include "unwinder/cfi/encoding.h"

namespace unwindd::unwinder {
namespace {

using memory::ByteReader;

// LSB Core 5.0 §10.6.2, table 10-11: the only version there is.
constexpr uint8_t kEhFrameHdrVersion = 1;

// The header's own pointers resolve like gcc's unwind-dw2-fde-dip.c
// (base_from_cb_data): datarel is relative to the start of .eh_frame_hdr,
// pcrel to the field itself; there is no text or function base here.
EncodingBases HdrBases(uint64_t vaddr) {
  EncodingBases bases;
  bases.data = vaddr;
  return bases;
}

absl::StatusOr<uint64_t> ReadHdrPointer(ByteReader& r, uint8_t encoding,
                                        int address_size, uint64_t vaddr,
                                        const char* what) {
  const uint8_t application = encoding & 0x70;
  if (encoding == kPeOmit || (encoding & kPeIndirect) != 0 ||
      application == kPeTextrel || application == kPeFuncrel) {
    return absl::DataLossError(absl::StrFormat(
        ".eh_frame_hdr at 0x%x: unusable %s encoding 0x%02x at 0x%x", vaddr,
        what, encoding, r.addr()));
  }
  absl::StatusOr<EncodedPointer> p =
      ReadEncodedPointer(r, encoding, address_size, HdrBases(vaddr));
  if (!p.ok()) {
    return absl::Status(
        p.status().code(),
        absl::StrCat(".eh_frame_hdr ", what, ": ", p.status().message()));
  }
  return p->value;
}

// The binary search reads table entries in place, which needs every entry
// the same size and resolvable from its own address or the header start.
bool SearchableTableEncoding(uint8_t encoding, int address_size) {
  if (encoding == kPeOmit || (encoding & kPeIndirect) != 0) return false;
  const uint8_t application = encoding & 0x70;
  if (application != 0 && application != kPePcrel &&
      application != kPeDatarel) {
    return false;
  }
  return EncodedPointerSize(encoding, address_size) > 0;
}

// The FDE address of the entry whose initial_location is the greatest one
// <= pc, among `count` sorted ascending (LSB §10.6.2). `field(index, which)`
// reads field `which` (0 = initial_location, 1 = FDE address) of an entry.
template <typename Field>
absl::StatusOr<uint64_t> SearchTable(uint64_t count, uint64_t pc, uint64_t vaddr,
                                     Field field) {
  // Count the entries whose initial_location is <= pc; the last of them is
  // the candidate.
  uint64_t lo = 0;
  uint64_t hi = count;
  while (lo < hi) {
    const uint64_t mid = lo + (hi - lo) / 2;
    absl::StatusOr<uint64_t> loc = field(mid, 0);
    if (!loc.ok()) return loc.status();
    if (*loc <= pc) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (lo == 0) {
    return absl::NotFoundError(absl::StrFormat(
        "pc 0x%x is below the first .eh_frame_hdr entry (hdr at 0x%x)", pc, vaddr));
  }
  return field(lo - 1, 1);
}

}  // namespace

absl::StatusOr<EhFrameHdr> EhFrameHdr::Parse(absl::Span<const uint8_t> data,
                                             uint64_t vaddr, int address_size) {
  if (address_size != 4 && address_size != 8) {
    return absl::InvalidArgumentError(
        absl::StrFormat("address size %d is neither 4 nor 8", address_size));
  }
  ByteReader r(data, vaddr);
  uint8_t fields[4];  // version, eh_frame_ptr_enc, fde_count_enc, table_enc
  for (uint8_t& field : fields) {
    absl::StatusOr<uint8_t> b = r.U8();
    if (!b.ok()) {
      return absl::DataLossError(
          absl::StrFormat(".eh_frame_hdr at 0x%x: truncated header (%u bytes)",
                          vaddr, data.size()));
    }
    field = *b;
  }
  const uint8_t version = fields[0];
  const uint8_t eh_frame_ptr_enc = fields[1];
  const uint8_t fde_count_enc = fields[2];
  const uint8_t table_enc = fields[3];
  if (version != kEhFrameHdrVersion) {
    return absl::DataLossError(absl::StrFormat(
        ".eh_frame_hdr at 0x%x: unsupported version %d", vaddr, version));
  }

  EhFrameHdr hdr;
  hdr.data_ = data;
  hdr.vaddr_ = vaddr;
  hdr.address_size_ = address_size;
  hdr.table_encoding_ = table_enc;
  absl::StatusOr<uint64_t> eh_frame_ptr =
      ReadHdrPointer(r, eh_frame_ptr_enc, address_size, vaddr, "eh_frame_ptr");
  if (!eh_frame_ptr.ok()) return eh_frame_ptr.status();
  hdr.eh_frame_vaddr_ = *eh_frame_ptr;

  // An omitted count means there is no table (ld writes that when it could
  // not sort the FDEs); callers then index .eh_frame themselves.
  if (fde_count_enc == kPeOmit) return hdr;
  absl::StatusOr<uint64_t> fde_count =
      ReadHdrPointer(r, fde_count_enc, address_size, vaddr, "fde_count");
  if (!fde_count.ok()) return fde_count.status();
  hdr.fde_count_ = *fde_count;
  if (!SearchableTableEncoding(table_enc, address_size)) {
    // LEB128, aligned, textrel/funcrel or indirect tables cannot be searched
    // in place: HasTable() is false and callers fall back.
    return hdr;
  }

  const size_t entry_size =
      2 * static_cast<size_t>(EncodedPointerSize(table_enc, address_size));
  // Checked without multiplying: fde_count comes from the file and may be
  // anything up to 2^64-1.
  if (hdr.fde_count_ > r.remaining() / entry_size) {
    return absl::DataLossError(absl::StrFormat(
        ".eh_frame_hdr at 0x%x: %u entries of %u bytes do not fit in the %u "
        "bytes after offset 0x%x",
        vaddr, hdr.fde_count_, entry_size, r.remaining(), r.offset()));
  }
  hdr.table_offset_ = r.offset();
  hdr.entry_size_ = entry_size;
  return hdr;
}

absl::StatusOr<uint64_t> EhFrameHdr::Lookup(uint64_t pc) const {
  if (!HasTable()) {
    return absl::NotFoundError(absl::StrFormat(
        ".eh_frame_hdr at 0x%x has no searchable table (looking up pc 0x%x)",
        vaddr_, pc));
  }
  if (table_encoding_ == (kPeDatarel | kPeSdata4)) {
    // The table every GNU and LLVM linker writes, read straight from its
    // bytes (little-endian, as every arch this reads is; Parse checked
    // that all fde_count_ entries of 8 bytes lie in data_), resolved as
    // ReadEncodedPointer would: sign-extended, added to the header's
    // address modulo the address width.
    return SearchTable(fde_count_, pc, vaddr_,
                       [this](uint64_t index, int which) -> absl::StatusOr<uint64_t> {
                         const uint8_t* p = data_.data() + table_offset_ + index * 8 +
                                            static_cast<size_t>(which) * 4;
                         const uint32_t raw =
                             static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
                             static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
                         uint64_t value = vaddr_ + static_cast<uint64_t>(static_cast<int64_t>(
                                                       static_cast<int32_t>(raw)));
                         if (address_size_ == 4) value &= 0xffffffffu;
                         return value;
                       });
  }
  ByteReader r(data_, vaddr_);
  const size_t field_size = entry_size_ / 2;
  // Decoded where it lies, so that pcrel resolves against its own address.
  return SearchTable(fde_count_, pc, vaddr_,
                     [&](uint64_t index, int which) -> absl::StatusOr<uint64_t> {
                       absl::Status s = r.Seek(table_offset_ + index * entry_size_ +
                                               static_cast<size_t>(which) * field_size);
                       if (!s.ok()) return s;
                       absl::StatusOr<EncodedPointer> p = ReadEncodedPointer(
                           r, table_encoding_, address_size_, HdrBases(vaddr_));
                       if (!p.ok()) return p.status();
                       return p->value;
                     });
}

}  // namespace unwindd::unwinder
