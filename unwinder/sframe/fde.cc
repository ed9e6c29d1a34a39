#include "unwinder/sframe/fde.h"

#include "absl/strings/str_format.h"
#include "unwinder/sframe/cursor.h"

namespace unwindd::unwinder::sframe {
namespace {

// The fields every version shares, in the order they appear.
struct RawFde {
  int64_t start_offset = 0;  // sfde_func_start_address / sfdi_func_start_offset
  uint32_t func_size = 0;
  uint32_t start_fre_off = 0;
  uint32_t num_fres = 0;  // v1/v2 (v3: in the attributes)
  uint8_t info = 0;       // v1/v2 (v3: in the attributes)
  uint8_t info2 = 0;      // v3 only
  uint8_t rep_size = 0;   // v2/v3
};

absl::StatusOr<uint64_t> FdeOffset(const Header& h, uint32_t index) {
  if (index >= h.num_fdes) {
    return absl::DataLossError(absl::StrFormat(
        "SFrame FDE index %u out of range (%u FDEs)", index, h.num_fdes));
  }
  return h.fde_start + uint64_t{index} * h.fde_size;
}

// §2.3 (v1): start s32, size u32, fre_off u32, num_fres u32, info u8.
// §2.3 (v2): the same, then rep_size u8 and two bytes of padding.
absl::Status ReadV1V2(Cursor& c, uint8_t version, RawFde& f) {
  absl::StatusOr<int32_t> start = c.S32();
  absl::StatusOr<uint32_t> size = c.U32();
  absl::StatusOr<uint32_t> fre_off = c.U32();
  absl::StatusOr<uint32_t> num = c.U32();
  absl::StatusOr<uint8_t> info = c.U8();
  for (const absl::Status& s : {start.status(), size.status(), fre_off.status(),
                                num.status(), info.status()}) {
    if (!s.ok()) return s;
  }
  f = {*start, *size, *fre_off, *num, *info, 0, 0};
  if (version == kVersion2) {
    absl::StatusOr<uint8_t> rep = c.U8();
    if (!rep.ok()) return rep.status();
    f.rep_size = *rep;
  } else {
    f.rep_size = kV1PcMaskBlockSize;
  }
  return absl::OkStatus();
}

// §2.3 (v3) sframe_func_desc_idx: start s64, size u32, fre_off u32.
absl::Status ReadV3Index(Cursor& c, RawFde& f) {
  absl::StatusOr<int64_t> start = c.S64();
  absl::StatusOr<uint32_t> size = c.U32();
  absl::StatusOr<uint32_t> fre_off = c.U32();
  for (const absl::Status& s :
       {start.status(), size.status(), fre_off.status()}) {
    if (!s.ok()) return s;
  }
  f.start_offset = *start;
  f.func_size = *size;
  f.start_fre_off = *fre_off;
  return absl::OkStatus();
}

// §2.3.2 (v3) sframe_func_desc_attr, at the start of the function's FREs:
// num_fres u16, info u8, info2 u8, rep_size u8.
absl::Status ReadV3Attr(Cursor& c, const Header& h, RawFde& f) {
  const uint64_t at = h.fre_start + f.start_fre_off;
  if (at > h.fre_end || h.fre_end - at < kFdeAttrSizeV3) {
    return absl::DataLossError(absl::StrFormat(
        "SFrame FDE attributes at offset 0x%x are outside the FRE sub-section "
        "[0x%x, 0x%x)",
        at, h.fre_start, h.fre_end));
  }
  absl::Status s = c.Seek(at);
  if (!s.ok()) return s;
  absl::StatusOr<uint16_t> num = c.U16();
  absl::StatusOr<uint8_t> info = c.U8();
  absl::StatusOr<uint8_t> info2 = c.U8();
  absl::StatusOr<uint8_t> rep = c.U8();
  for (const absl::Status& st :
       {num.status(), info.status(), info2.status(), rep.status()}) {
    if (!st.ok()) return st;
  }
  f.num_fres = *num;
  f.info = *info;
  f.info2 = *info2;
  f.rep_size = *rep;
  return absl::OkStatus();
}

// §2.3: the start is relative to the section, or (SFRAME_F_FDE_FUNC_START_
// PCREL) to the start field itself, which is the first field of the FDE.
absl::StatusOr<FdeRange> Resolve(const Header& h, uint64_t section_vaddr,
                                 uint64_t fde_offset, const RawFde& f) {
  uint64_t base = section_vaddr;
  if (h.func_start_pcrel() && __builtin_add_overflow(base, fde_offset, &base)) {
    return absl::DataLossError("SFrame section address wraps");
  }
  FdeRange r;
  if (__builtin_add_overflow(base, static_cast<uint64_t>(f.start_offset),
                             &r.start) != (f.start_offset < 0) ||
      __builtin_add_overflow(r.start, uint64_t{f.func_size}, &r.end)) {
    return absl::DataLossError(absl::StrFormat(
        "SFrame FDE at offset 0x%x: function start %+d from 0x%x wraps around "
        "the address space",
        fde_offset, f.start_offset, base));
  }
  return r;
}

absl::StatusOr<RawFde> ReadRawIndex(absl::Span<const uint8_t> section,
                                    const Header& h, uint64_t offset) {
  Cursor c(section, h.big_endian);
  absl::Status s = c.Seek(offset);
  if (!s.ok()) return s;
  RawFde f;
  s = h.version >= kVersion3 ? ReadV3Index(c, f) : ReadV1V2(c, h.version, f);
  if (!s.ok()) return s;
  return f;
}

}  // namespace

absl::StatusOr<FdeRange> ReadFdeRange(absl::Span<const uint8_t> section,
                                      const Header& header,
                                      uint64_t section_vaddr, uint32_t index) {
  absl::StatusOr<uint64_t> offset = FdeOffset(header, index);
  if (!offset.ok()) return offset.status();
  absl::StatusOr<RawFde> raw = ReadRawIndex(section, header, *offset);
  if (!raw.ok()) return raw.status();
  return Resolve(header, section_vaddr, *offset, *raw);
}

absl::StatusOr<Fde> ReadFde(absl::Span<const uint8_t> section, const Header& h,
                            uint64_t section_vaddr, uint32_t index) {
  absl::StatusOr<uint64_t> offset = FdeOffset(h, index);
  if (!offset.ok()) return offset.status();
  absl::StatusOr<RawFde> raw = ReadRawIndex(section, h, *offset);
  if (!raw.ok()) return raw.status();
  uint64_t fres = h.fre_start + raw->start_fre_off;
  if (h.version >= kVersion3) {
    Cursor c(section, h.big_endian);
    absl::Status s = ReadV3Attr(c, h, *raw);
    if (!s.ok()) return s;
    fres += kFdeAttrSizeV3;
  }
  absl::StatusOr<FdeRange> range = Resolve(h, section_vaddr, *offset, *raw);
  if (!range.ok()) return range.status();

  Fde fde;
  fde.index = index;
  fde.func_start = range->start;
  fde.func_size = raw->func_size;
  fde.fres_offset = fres;
  fde.num_fres = raw->num_fres;
  fde.fre_type = raw->info & 0xf;
  fde.pc_type = (raw->info >> 4) & 1;
  fde.pauth_key_b = ((raw->info >> 5) & 1) != 0;
  fde.signal_frame = h.version >= kVersion3 && ((raw->info >> 7) & 1) != 0;
  fde.fde_type = raw->info2 & 0x1f;
  fde.rep_size = raw->rep_size;
  if (fde.fre_type > kFreTypeAddr4) {
    return absl::DataLossError(
        absl::StrFormat("SFrame FDE %u (offset 0x%x): unknown FRE type %d",
                        index, *offset, fde.fre_type));
  }
  if (fde.pc_type == kPcTypeMask && fde.rep_size == 0) {
    return absl::DataLossError(absl::StrFormat(
        "SFrame FDE %u (offset 0x%x): PCMASK without a block size", index,
        *offset));
  }
  if (fde.fde_type > kFdeTypeFlex) {
    return absl::UnimplementedError(
        absl::StrFormat("SFrame FDE %u (offset 0x%x): unknown FDE type %d",
                        index, *offset, fde.fde_type));
  }
  return fde;
}

}  // namespace unwindd::unwinder::sframe
