#include "unwinder/cfi/cfi_section.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "arch/arch.h"
#include "memory/byte_reader.h"
#include "unwinder/cfi/encoding.h"

namespace unwindd::unwinder {
namespace {

using memory::ByteReader;

// DWARF 5 §7.4: initial lengths 0xfffffff0-0xfffffffe are reserved, and
// 0xffffffff announces a 64-bit length (the 64-bit DWARF format). LSB Core
// 5.0 §10.6.1.1 gives .eh_frame the same "extended length".
constexpr uint32_t kDwarf64Escape = 0xffffffffu;
constexpr uint32_t kReservedLengthsStart = 0xfffffff0u;
// DWARF 5 §7.3 / §6.4.1: .debug_frame marks a CIE with an all-ones id; LSB
// §10.6.1.1: .eh_frame marks it with 0.
constexpr uint64_t kDebugFrameCieId32 = 0xffffffffu;
constexpr uint64_t kDebugFrameCieId64 = ~uint64_t{0};

// With overlapping FDEs (malformed, or identical-code-folded functions) the
// FDE starting closest below a PC may not cover it while an earlier one
// does. Looking back this many entries covers real overlaps while keeping a
// hostile section from turning each lookup into a linear scan.
constexpr int kMaxOverlapScan = 32;

// The parts of a CfiSection the parsers need; lets the index builder share
// the parsers with the const accessors without adding private methods.
struct SectionView {
  CfiKind kind;
  absl::Span<const uint8_t> data;
  uint64_t vaddr;
  int arch_address_size;
  EncodingBases bases;
};

// What every CIE and FDE starts with: length, then CIE id / CIE pointer.
struct EntryHeader {
  uint64_t offset = 0;       // of the length field
  uint64_t id_offset = 0;    // of the CIE id / CIE pointer field
  uint64_t body_offset = 0;  // first byte after that field
  uint64_t end = 0;          // one past the entry's last byte
  uint64_t id = 0;
  bool dwarf64 = false;
  bool terminator = false;  // zero length (LSB §10.6.1: end of .eh_frame)
  bool is_cie = false;
};

const char* SectionName(CfiKind kind) {
  return kind == CfiKind::kEhFrame ? ".eh_frame" : ".debug_frame";
}

// Same code, with "<section> <what> at offset 0x..: " in front.
template <typename T>
absl::StatusOr<T> InEntry(absl::StatusOr<T> v, CfiKind kind, const char* what,
                          uint64_t offset) {
  if (v.ok()) return v;
  return absl::Status(
      v.status().code(),
      absl::StrFormat("%s %s at offset 0x%x: %s", SectionName(kind), what,
                      offset, v.status().message()));
}

absl::StatusOr<EntryHeader> ReadEntryHeaderImpl(const SectionView& v,
                                                uint64_t offset) {
  if (offset >= v.data.size()) {
    return absl::DataLossError(
        absl::StrFormat("past the section end (0x%x bytes)", v.data.size()));
  }
  ByteReader r(v.data, v.vaddr);
  r.Seek(offset).IgnoreError();  // checked just above
  EntryHeader h;
  h.offset = offset;
  absl::StatusOr<uint32_t> length32 = r.U32();
  if (!length32.ok()) return length32.status();
  if (*length32 == 0) {
    h.terminator = true;
    h.end = r.offset();
    return h;
  }
  if (*length32 >= kReservedLengthsStart && *length32 != kDwarf64Escape) {
    return absl::DataLossError(
        absl::StrFormat("reserved initial length 0x%x", *length32));
  }
  h.dwarf64 = *length32 == kDwarf64Escape;
  absl::StatusOr<uint64_t> length =
      h.dwarf64 ? r.U64() : absl::StatusOr<uint64_t>(*length32);
  if (!length.ok()) return length.status();
  if (*length > r.remaining()) {
    return absl::DataLossError(
        absl::StrFormat("length 0x%x runs past the section end (0x%x bytes)",
                        *length, v.data.size()));
  }
  h.end = r.offset() + *length;
  // The id / CIE pointer is offset-sized: 8 bytes in the 64-bit format, in
  // .eh_frame too (elfutils and libunwindstack agree; gcc never emits it).
  if (*length < (h.dwarf64 ? 8u : 4u)) {
    return absl::DataLossError(
        absl::StrFormat("length 0x%x too short for its CIE id", *length));
  }
  h.id_offset = r.offset();
  absl::StatusOr<uint64_t> id =
      h.dwarf64 ? r.U64() : absl::StatusOr<uint64_t>(r.U32());
  if (!id.ok()) return id.status();
  h.id = *id;
  h.body_offset = r.offset();
  h.is_cie =
      v.kind == CfiKind::kEhFrame
          ? h.id == 0
          : h.id == (h.dwarf64 ? kDebugFrameCieId64 : kDebugFrameCieId32);
  return h;
}

absl::StatusOr<EntryHeader> ReadEntryHeader(const SectionView& v,
                                            uint64_t offset) {
  return InEntry(ReadEntryHeaderImpl(v, offset), v.kind, "entry", offset);
}

// A reader limited to one entry, so that no field can be read from the next.
ByteReader EntryReader(const SectionView& v, const EntryHeader& h) {
  ByteReader r(v.data.first(h.end), v.vaddr);
  r.Seek(h.body_offset).IgnoreError();  // body_offset <= end by construction
  return r;
}

// Encoded pointers whose encoding came from the section: an omitted or
// unusable encoding there is malformed CFI, not a caller mistake.
absl::StatusOr<uint64_t> ReadCfiPointer(ByteReader& r, uint8_t encoding,
                                        int address_size,
                                        const EncodingBases& bases) {
  absl::StatusOr<EncodedPointer> p =
      ReadEncodedPointer(r, encoding, address_size, bases);
  if (!p.ok()) {
    if (absl::IsInvalidArgument(p.status())) {
      return absl::DataLossError(p.status().message());
    }
    return p.status();
  }
  return p->value;
}

// Reads the augmentation-dependent CIE fields, DWARF 5 §6.4.1 item 4 and LSB
// §10.6.1.1.1 ("Augmentation String Format"). `r` is just past the
// augmentation string ("eh" and the v4 fields already consumed);
// `letters` is what is left of the string to interpret.
absl::Status ReadAugmentation(ByteReader& r, absl::string_view letters,
                              const SectionView& v, Cie& cie) {
  size_t aug_end = 0;
  if (!letters.empty() && letters.front() == 'z') {
    letters.remove_prefix(1);
    absl::StatusOr<uint64_t> len = r.ULEB128();
    if (!len.ok()) return len.status();
    if (*len > r.remaining()) {
      return absl::DataLossError(absl::StrFormat(
          "augmentation data length 0x%x at 0x%x runs past the entry", *len,
          r.addr()));
    }
    aug_end = r.offset() + *len;
    cie.has_augmentation_data = true;
  }
  EncodingBases bases = v.bases;
  bases.func = 0;
  bool stop = false;
  for (size_t i = 0; i < letters.size() && !stop; ++i) {
    switch (letters[i]) {
      case 'R':
      case 'L': {
        absl::StatusOr<uint8_t> enc = r.U8();
        if (!enc.ok()) return enc.status();
        (letters[i] == 'R' ? cie.fde_encoding : cie.lsda_encoding) = *enc;
        break;
      }
      case 'P': {
        // The personality routine matters to exception handling only.
        absl::StatusOr<uint8_t> enc = r.U8();
        if (!enc.ok()) return enc.status();
        absl::StatusOr<uint64_t> personality =
            ReadCfiPointer(r, *enc, cie.address_size, bases);
        if (!personality.ok()) return personality.status();
        break;
      }
      case 'S':
        cie.signal_frame = true;
        break;
      case 'B':
        cie.b_key = true;
        break;
      case 'G':
        // MTE-tagged stack frame (aarch64): nothing for an unwinder to do.
        break;
      default:
        if (!cie.has_augmentation_data) {
          // Without 'z' there is no way to know how long its data is.
          return absl::DataLossError(absl::StrFormat(
              "unknown augmentation '%c' without 'z' before 0x%x", letters[i],
              r.addr()));
        }
        // LSB §10.6.1.1.1: with 'z', an unknown letter ends interpretation
        // and the length lets us skip what we do not understand.
        stop = true;
        break;
    }
  }
  if (cie.has_augmentation_data) {
    if (r.offset() > aug_end) {
      return absl::DataLossError(absl::StrFormat(
          "augmentation fields overrun their declared length at 0x%x",
          r.addr()));
    }
    return r.Seek(aug_end);
  }
  return absl::OkStatus();
}

absl::StatusOr<Cie> ParseCieImpl(const SectionView& v, const EntryHeader& h) {
  ByteReader r = EntryReader(v, h);

  Cie cie;
  cie.offset = h.offset;
  cie.address_size = static_cast<uint8_t>(v.arch_address_size);
  absl::StatusOr<uint8_t> version = r.U8();
  if (!version.ok()) return version.status();
  if (*version != 1 && *version != 3 && *version != 4) {
    return absl::DataLossError(
        absl::StrFormat("unsupported version %d", *version));
  }
  cie.version = *version;
  absl::StatusOr<absl::string_view> aug = r.CString();
  if (!aug.ok()) return aug.status();
  cie.augmentation = *aug;
  absl::string_view letters = *aug;

  // gcc 2.x "eh": a pointer-sized word (the old exception table) follows the
  // string, before anything else (gcc unwind-dw2.c, extract_cie_info).
  if (absl::StartsWith(letters, "eh")) {
    letters.remove_prefix(2);
    absl::Status s = r.Skip(static_cast<uint64_t>(v.arch_address_size));
    if (!s.ok()) return s;
  }
  // DWARF 5 §6.4.1 items 5-6 (version 4+): address and segment sizes.
  if (cie.version >= 4) {
    absl::StatusOr<absl::Span<const uint8_t>> sizes = r.Bytes(2);
    if (!sizes.ok()) return sizes.status();
    cie.address_size = (*sizes)[0];
    cie.segment_size = (*sizes)[1];
    if (cie.address_size != 4 && cie.address_size != 8) {
      return absl::DataLossError(
          absl::StrFormat("unsupported address_size %d", cie.address_size));
    }
    // .eh_frame addresses are never segmented (gcc rejects it too).
    if (v.kind == CfiKind::kEhFrame && cie.segment_size != 0) {
      return absl::DataLossError(
          absl::StrFormat("segment_size %d in .eh_frame", cie.segment_size));
    }
  }
  absl::StatusOr<uint64_t> code_alignment = r.ULEB128();
  if (!code_alignment.ok()) return code_alignment.status();
  cie.code_alignment = *code_alignment;
  absl::StatusOr<int64_t> data_alignment = r.SLEB128();
  if (!data_alignment.ok()) return data_alignment.status();
  cie.data_alignment = *data_alignment;
  // Version 1 stores the return address column in a ubyte; 3+ in a ULEB.
  absl::StatusOr<uint64_t> ra =
      cie.version == 1 ? absl::StatusOr<uint64_t>(r.U8()) : r.ULEB128();
  if (!ra.ok()) return ra.status();
  if (*ra > std::numeric_limits<uint16_t>::max()) {
    return absl::DataLossError(
        absl::StrFormat("return address register %u out of range", *ra));
  }
  cie.return_address_register = static_cast<uint16_t>(*ra);

  absl::Status s = ReadAugmentation(r, letters, v, cie);
  if (!s.ok()) return s;

  absl::StatusOr<absl::Span<const uint8_t>> insns = r.Bytes(r.remaining());
  if (!insns.ok()) return insns.status();
  cie.initial_instructions = *insns;
  return cie;
}

absl::StatusOr<Cie> ParseCie(const SectionView& v, const EntryHeader& h) {
  return InEntry(ParseCieImpl(v, h), v.kind, "CIE", h.offset);
}

// Where the CIE of an FDE is: .eh_frame stores the distance back from the
// pointer field itself (LSB §10.6.1.2), .debug_frame a section offset
// (DWARF 5 §6.4.1 item 2 of the FDE).
absl::StatusOr<uint64_t> CieOffsetOfImpl(const SectionView& v,
                                         const EntryHeader& h) {
  if (v.kind == CfiKind::kEhFrame && h.id > h.id_offset) {
    return absl::DataLossError(absl::StrFormat(
        "CIE pointer 0x%x points before the section start", h.id));
  }
  const uint64_t cie_offset =
      v.kind == CfiKind::kEhFrame ? h.id_offset - h.id : h.id;
  if (cie_offset >= v.data.size()) {
    return absl::DataLossError(
        absl::StrFormat("CIE offset 0x%x is outside the section", cie_offset));
  }
  if (cie_offset == h.offset) {
    return absl::DataLossError("CIE pointer points at the FDE itself");
  }
  return cie_offset;
}

absl::StatusOr<uint64_t> CieOffsetOf(const SectionView& v,
                                     const EntryHeader& h) {
  return InEntry(CieOffsetOfImpl(v, h), v.kind, "FDE", h.offset);
}

// The CIE an FDE at `fde_offset` names; anything else there is DataLoss.
absl::StatusOr<Cie> LoadCie(const SectionView& v, uint64_t cie_offset,
                            uint64_t fde_offset) {
  absl::StatusOr<EntryHeader> ch = ReadEntryHeader(v, cie_offset);
  if (!ch.ok()) return ch.status();
  if (ch->terminator || !ch->is_cie) {
    return absl::DataLossError(absl::StrFormat(
        "%s FDE at offset 0x%x: CIE pointer leads to offset 0x%x, which is "
        "not a CIE",
        SectionName(v.kind), fde_offset, cie_offset));
  }
  return ParseCie(v, *ch);
}

absl::StatusOr<Fde> ParseFdeImpl(const SectionView& v, const EntryHeader& h,
                                 const Cie& cie) {
  ByteReader r = EntryReader(v, h);

  // DWARF 4+ §6.4.1: a segment selector precedes initial_location.
  if (cie.segment_size != 0) {
    absl::Status s = r.Skip(cie.segment_size);
    if (!s.ok()) return s;
  }
  // .debug_frame without 'z' holds plain target addresses.
  uint8_t encoding = cie.fde_encoding;
  if (v.kind == CfiKind::kDebugFrame && !cie.has_augmentation_data) {
    encoding = kPeAbsptr;
  }
  if ((encoding & kPeIndirect) != 0) {
    return absl::DataLossError(
        absl::StrFormat("indirect FDE pointer encoding 0x%02x", encoding));
  }
  // An FDE's own fields have no function to be relative to.
  EncodingBases bases = v.bases;
  bases.func = 0;
  absl::StatusOr<uint64_t> begin =
      ReadCfiPointer(r, encoding, cie.address_size, bases);
  if (!begin.ok()) return begin.status();
  // pc_range is a length, not an address: only the value format applies
  // (gcc unwind-dw2-fde.c reads it with `encoding & 0x0f`).
  absl::StatusOr<uint64_t> range =
      ReadCfiPointer(r, encoding & 0x0f, cie.address_size, bases);
  if (!range.ok()) return range.status();
  const uint64_t max_address = cie.address_size == 4
                                   ? uint64_t{0xffffffffu}
                                   : std::numeric_limits<uint64_t>::max();
  if (*range > max_address - *begin) {
    return absl::DataLossError(absl::StrFormat(
        "range 0x%x from 0x%x overflows the address space", *range, *begin));
  }

  if (cie.has_augmentation_data) {
    // LSB §10.6.1.2: augmentation data length, then (with 'L') the LSDA
    // pointer; the length lets us skip it all.
    absl::StatusOr<uint64_t> len = r.ULEB128();
    if (!len.ok()) return len.status();
    absl::Status s = r.Skip(*len);
    if (!s.ok()) return s;
  } else if (cie.lsda_encoding != kPeOmit) {
    // 'L' without 'z': the LSDA pointer sits here with no length before it.
    bases.func = *begin;
    absl::StatusOr<uint64_t> lsda =
        ReadCfiPointer(r, cie.lsda_encoding, cie.address_size, bases);
    if (!lsda.ok()) return lsda.status();
  }

  absl::StatusOr<absl::Span<const uint8_t>> insns = r.Bytes(r.remaining());
  if (!insns.ok()) return insns.status();
  Fde fde;
  fde.offset = h.offset;
  fde.cie = cie;
  fde.pc_begin = *begin;
  fde.pc_end = *begin + *range;
  fde.instructions = *insns;
  return fde;
}

absl::StatusOr<Fde> ParseFde(const SectionView& v, const EntryHeader& h,
                             const Cie& cie) {
  return InEntry(ParseFdeImpl(v, h, cie), v.kind, "FDE", h.offset);
}

SectionView MakeView(CfiKind kind, absl::Span<const uint8_t> data,
                     uint64_t vaddr, int address_size, EncodingBases bases) {
  return SectionView{kind, data, vaddr, address_size, bases};
}

// The header at `offset`, which the caller expects to be a CIE or an FDE:
// the other kind is InvalidArgument, a terminator DataLoss.
absl::StatusOr<EntryHeader> ExpectEntry(const SectionView& v, uint64_t offset,
                                        bool want_cie) {
  absl::StatusOr<EntryHeader> h = ReadEntryHeader(v, offset);
  if (!h.ok()) return h.status();
  const char* want = want_cie ? "CIE" : "FDE";
  if (h->terminator) {
    return absl::DataLossError(
        absl::StrFormat("%s offset 0x%x is a zero terminator, not a %s",
                        SectionName(v.kind), offset, want));
  }
  if (h->is_cie != want_cie) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s offset 0x%x is a %s, not a %s", SectionName(v.kind),
                        offset, want_cie ? "FDE" : "CIE", want));
  }
  return h;
}

}  // namespace

CfiSection::CfiSection(CfiKind kind, absl::Span<const uint8_t> data,
                       uint64_t vaddr, arch::Arch arch, EncodingBases bases,
                       int address_size)
    : kind_(kind),
      data_(data),
      vaddr_(vaddr),
      address_size_(address_size != 0 ? address_size
                                       : arch::GetArchInfo(arch).address_size),
      bases_(bases) {}

absl::StatusOr<Cie> CfiSection::ParseCieAt(uint64_t offset) const {
  const SectionView v = MakeView(kind_, data_, vaddr_, address_size_, bases_);
  absl::StatusOr<EntryHeader> h = ExpectEntry(v, offset, /*want_cie=*/true);
  if (!h.ok()) return h.status();
  return ParseCie(v, *h);
}

absl::StatusOr<Fde> CfiSection::ParseFdeAt(uint64_t offset) const {
  const SectionView v = MakeView(kind_, data_, vaddr_, address_size_, bases_);
  absl::StatusOr<EntryHeader> h = ExpectEntry(v, offset, /*want_cie=*/false);
  if (!h.ok()) return h.status();
  absl::StatusOr<uint64_t> cie_offset = CieOffsetOf(v, *h);
  if (!cie_offset.ok()) return cie_offset.status();
  absl::StatusOr<Cie> cie = LoadCie(v, *cie_offset, offset);
  if (!cie.ok()) return cie.status();
  return ParseFde(v, *h, *cie);
}

void CfiSection::BuildIndex() {
  index_built_ = true;
  index_.clear();
  const SectionView v = MakeView(kind_, data_, vaddr_, address_size_, bases_);
  // Most sections have a handful of CIEs shared by thousands of FDEs.
  absl::flat_hash_map<uint64_t, absl::StatusOr<Cie>> cies;
  uint64_t offset = 0;
  // Terminates: every entry ends past its own start, so `offset` grows.
  while (offset < data_.size()) {
    absl::StatusOr<EntryHeader> h = ReadEntryHeader(v, offset);
    if (!h.ok() || h->terminator) break;
    offset = h->end;
    if (h->is_cie) continue;
    absl::StatusOr<uint64_t> cie_offset = CieOffsetOf(v, *h);
    if (!cie_offset.ok()) continue;
    auto it = cies.find(*cie_offset);
    if (it == cies.end()) {
      it = cies.emplace(*cie_offset, LoadCie(v, *cie_offset, h->offset)).first;
    }
    if (!it->second.ok()) continue;
    absl::StatusOr<Fde> fde = ParseFde(v, *h, *it->second);
    if (!fde.ok() || fde->pc_begin == fde->pc_end) continue;
    index_.push_back(IndexEntry{fde->pc_begin, fde->pc_end, fde->offset});
  }
  std::sort(index_.begin(), index_.end(),
            [](const IndexEntry& a, const IndexEntry& b) {
              return std::tie(a.pc_begin, a.pc_end, a.offset) <
                     std::tie(b.pc_begin, b.pc_end, b.offset);
            });
}

absl::StatusOr<Fde> CfiSection::FindFde(uint64_t pc) {
  if (!index_built_) BuildIndex();
  // First entry starting above pc; candidates are the ones before it.
  auto it = std::upper_bound(
      index_.begin(), index_.end(), pc,
      [](uint64_t p, const IndexEntry& e) { return p < e.pc_begin; });
  for (int n = 0; it != index_.begin() && n < kMaxOverlapScan; ++n) {
    --it;
    if (pc < it->pc_end) return ParseFdeAt(it->offset);
  }
  return absl::NotFoundError(
      absl::StrFormat("no %s FDE covers pc 0x%x", SectionName(kind_), pc));
}

size_t CfiSection::IndexedFdeCount() {
  if (!index_built_) BuildIndex();
  return index_.size();
}

}  // namespace unwindd::unwinder
