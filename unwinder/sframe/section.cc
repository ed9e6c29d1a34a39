#include "unwinder/sframe/section.h"

#include <algorithm>
#include <optional>

#include "absl/strings/str_format.h"
#include "unwinder/sframe/to_row.h"

namespace unwindd::unwinder::sframe {

absl::StatusOr<std::unique_ptr<SframeSection>> SframeSection::Parse(
    absl::Span<const uint8_t> bytes, uint64_t vaddr) {
  absl::StatusOr<Header> h = ParseHeader(bytes);
  if (!h.ok()) return h.status();
  absl::StatusOr<arch::Arch> a = ArchOfAbi(h->abi);
  if (!a.ok()) return a.status();
  std::unique_ptr<SframeSection> s(new SframeSection());
  s->bytes_ = bytes;
  s->vaddr_ = vaddr;
  s->header_ = *h;
  s->arch_ = *a;
  absl::Status st = h->sorted() ? s->CheckSorted() : s->BuildIndex();
  if (!st.ok()) return st;
  return s;
}

// §2.1.3: with SFRAME_F_FDE_SORTED, FDEs are sorted by function start. A
// binary search over a section that only claims so would miss functions, so
// the claim is checked once (O(n), reading 8-20 bytes per FDE).
absl::Status SframeSection::CheckSorted() const {
  uint64_t previous = 0;
  for (uint32_t i = 0; i < header_.num_fdes; ++i) {
    absl::StatusOr<FdeRange> r = ReadFdeRange(bytes_, header_, vaddr_, i);
    if (!r.ok()) return r.status();
    if (i > 0 && r->start < previous) {
      return absl::DataLossError(absl::StrFormat(
          "SFrame FDE %u starts at 0x%x, before FDE %u at 0x%x, although "
          "SFRAME_F_FDE_SORTED is set",
          i, r->start, i - 1, previous));
    }
    previous = r->start;
  }
  return absl::OkStatus();
}

absl::Status SframeSection::BuildIndex() {
  index_.reserve(header_.num_fdes);  // bounded: the FDEs fit in the section
  for (uint32_t i = 0; i < header_.num_fdes; ++i) {
    absl::StatusOr<FdeRange> r = ReadFdeRange(bytes_, header_, vaddr_, i);
    if (!r.ok()) return r.status();
    index_.emplace_back(r->start, i);
  }
  std::stable_sort(
      index_.begin(), index_.end(),
      [](const auto& a, const auto& b) { return a.first < b.first; });
  return absl::OkStatus();
}

absl::StatusOr<uint32_t> SframeSection::FindFdeIndex(uint64_t pc) const {
  // The last FDE starting at or before pc, then whether it reaches pc.
  uint32_t candidate = 0;
  bool found = false;
  if (header_.sorted()) {
    uint32_t lo = 0, hi = header_.num_fdes;  // search [lo, hi)
    while (lo < hi) {
      const uint32_t mid = lo + (hi - lo) / 2;
      absl::StatusOr<FdeRange> r = ReadFdeRange(bytes_, header_, vaddr_, mid);
      if (!r.ok()) return r.status();
      if (r->start <= pc) {
        candidate = mid;
        found = true;
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
  } else {
    auto it =
        std::upper_bound(index_.begin(), index_.end(), pc,
                         [](uint64_t v, const auto& e) { return v < e.first; });
    if (it != index_.begin()) {
      candidate = std::prev(it)->second;
      found = true;
    }
  }
  if (found) {
    absl::StatusOr<FdeRange> r =
        ReadFdeRange(bytes_, header_, vaddr_, candidate);
    if (!r.ok()) return r.status();
    if (pc < r->end) return candidate;
  }
  return absl::NotFoundError(absl::StrFormat("no SFrame FDE covers 0x%x", pc));
}

absl::StatusOr<Fde> SframeSection::GetFde(uint32_t index) const {
  return ReadFde(bytes_, header_, vaddr_, index);
}

absl::StatusOr<Fde> SframeSection::FindFde(uint64_t pc) const {
  absl::StatusOr<uint32_t> i = FindFdeIndex(pc);
  if (!i.ok()) return i.status();
  return GetFde(*i);
}

absl::StatusOr<std::vector<Fre>> SframeSection::GetFres(const Fde& fde) const {
  std::vector<Fre> out;
  uint64_t offset = fde.fres_offset;
  // Each FRE is at least 2 bytes, so a count past what the sub-section can
  // hold is caught by ReadFre before the vector grows beyond the section.
  for (uint32_t i = 0; i < fde.num_fres; ++i) {
    absl::StatusOr<Fre> fre = ReadFre(bytes_, offset, fde.fre_type, header_);
    if (!fre.ok()) return fre.status();
    offset += fre->encoded_size;
    out.push_back(*fre);
  }
  return out;
}

absl::StatusOr<FreMatch> SframeSection::FindFre(uint64_t pc) const {
  absl::StatusOr<Fde> fde = FindFde(pc);
  if (!fde.ok()) return fde.status();
  // §2.3.1 PC types: PCINC FRE starts are offsets from the function start;
  // PCMASK ones are offsets into each rep_size-byte block (pltN entries).
  uint64_t offset = pc - fde->func_start;
  uint64_t block = fde->func_start;
  if (fde->pc_type == kPcTypeMask) {
    block += offset - offset % fde->rep_size;
    offset %= fde->rep_size;
  }
  const uint64_t block_end =
      fde->pc_type == kPcTypeMask
          ? std::min<uint64_t>(block + fde->rep_size, fde->func_end())
          : fde->func_end();
  std::optional<Fre> best;
  uint64_t at = fde->fres_offset;
  uint64_t next_start = block_end - block;
  for (uint32_t i = 0; i < fde->num_fres; ++i) {
    absl::StatusOr<Fre> fre = ReadFre(bytes_, at, fde->fre_type, header_);
    if (!fre.ok()) return fre.status();
    at += fre->encoded_size;
    if (fre->start > offset) {
      next_start = std::min<uint64_t>(fre->start, next_start);
      break;
    }
    best = *fre;
  }
  if (!best.has_value()) {
    return absl::NotFoundError(
        absl::StrFormat("SFrame FDE %u (function 0x%x) has no FRE for 0x%x",
                        fde->index, fde->func_start, pc));
  }
  return FreMatch{*fde, *best, block + best->start, block + next_start};
}

absl::StatusOr<Row> SframeSection::RowFor(const FreMatch& m) const {
  return FreToRow(header_, m.fde, m.fre, m.pc_lo, m.pc_hi, arena_);
}

absl::StatusOr<Row> SframeSection::FindRow(uint64_t pc) const {
  absl::StatusOr<FreMatch> m = FindFre(pc);
  if (!m.ok()) return m.status();
  return RowFor(*m);
}

}  // namespace unwindd::unwinder::sframe
