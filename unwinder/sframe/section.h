// A parsed .sframe section: finds the FDE and FRE for a PC and gives the
// Row for it, like CfiSection + ComputeRow do for .eh_frame.
//
//   absl::StatusOr<std::unique_ptr<SframeSection>> s =
//       SframeSection::Parse(section_bytes, section_vaddr);
//   absl::StatusOr<Row> row = (*s)->FindRow(file_pc);
//
// FDE lookup is a binary search over the section's own FDE array when the
// header says SFRAME_F_FDE_SORTED (checked once, at Parse: a section that
// claims to be sorted and is not is DataLoss), and over an index built at
// Parse otherwise. FRE lookup scans the function's FREs (they are variable-
// size), bounded by the FDE's count and the FRE sub-section. PCs are file
// addresses. The bytes must outlive the section. Thread-safe.
#ifndef UNWINDD_UNWINDER_SFRAME_SECTION_H_
#define UNWINDD_UNWINDER_SFRAME_SECTION_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "arch/arch.h"
#include "unwinder/cfi/row.h"
#include "unwinder/sframe/expr_arena.h"
#include "unwinder/sframe/fde.h"
#include "unwinder/sframe/fre.h"
#include "unwinder/sframe/header.h"

namespace unwindd::unwinder::sframe {

// The FRE that covers a PC, with the PCs it covers there.
struct FreMatch {
  Fde fde;
  Fre fre;
  uint64_t pc_lo = 0;  // file address, inclusive
  uint64_t pc_hi = 0;  // file address, exclusive
};

class SframeSection {
 public:
  // DataLoss for malformed headers and lying sort flags; Unimplemented for
  // unsupported versions and ABIs (s390x).
  static absl::StatusOr<std::unique_ptr<SframeSection>> Parse(
      absl::Span<const uint8_t> bytes, uint64_t vaddr);

  const Header& header() const { return header_; }
  arch::Arch arch() const { return arch_; }
  uint64_t vaddr() const { return vaddr_; }
  uint32_t num_fdes() const { return header_.num_fdes; }

  absl::StatusOr<Fde> GetFde(uint32_t index) const;
  // Every FRE of `fde`, in order.
  absl::StatusOr<std::vector<Fre>> GetFres(const Fde& fde) const;
  // NotFound if no FDE covers `pc` (or its FREs start after it).
  absl::StatusOr<Fde> FindFde(uint64_t pc) const;
  absl::StatusOr<FreMatch> FindFre(uint64_t pc) const;
  absl::StatusOr<Row> FindRow(uint64_t pc) const;
  // The Row of a known FRE (for tools that walk every FRE).
  absl::StatusOr<Row> RowFor(const FreMatch& match) const;

 private:
  SframeSection() = default;
  absl::Status CheckSorted() const;
  absl::Status BuildIndex();
  absl::StatusOr<uint32_t> FindFdeIndex(uint64_t pc) const;

  absl::Span<const uint8_t> bytes_;
  uint64_t vaddr_ = 0;
  Header header_;
  arch::Arch arch_ = arch::Arch::kX86_64;
  // Unsorted sections only: (function start, FDE index) by start.
  std::vector<std::pair<uint64_t, uint32_t>> index_;
  mutable ExprArena arena_;
};

}  // namespace unwindd::unwinder::sframe

#endif  // UNWINDD_UNWINDER_SFRAME_SECTION_H_
