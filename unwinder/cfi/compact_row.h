// The common case of a Row in a few bytes, applied in place: the CFA is a
// register plus an offset, the return address and the callee-saved
// registers are read from CFA + offset, the caller's SP is the CFA, and every
// other register keeps its value. Nearly every row of compiled code
// (.eh_frame, .debug_frame, SFrame) is of this form; the step cache keeps it
// per PC, so a warm step is a table lookup, a few additions and the reads.
//
//   std::optional<CompactRow> c = CompactRow::From(row, arch_info);
//   if (c && c->ApplyInPlace(regs, stack)) -> regs are the caller's
//   else -> ApplyRow(row, ...) for the general case and its error message
//
// Offsets are from the CFA, in the target's address space. ApplyInPlace
// gives the same registers as ApplyRow (apply.h) for every row From accepts.
#ifndef UNWINDD_UNWINDER_CFI_COMPACT_ROW_H_
#define UNWINDD_UNWINDER_CFI_COMPACT_ROW_H_

#include <cstdint>
#include <optional>

#include "arch/arch.h"
#include "arch/register_set.h"
#include "unwinder/cfi/row.h"
#include "unwinder/cfi/rules.h"

namespace unwindd::unwinder {

class CompactRow {
 public:
  // aarch64 saves up to x19..x29 besides the return address; x86_64 six.
  static constexpr int kMaxSaved = 12;

  // nullopt for rows this form cannot express: a CFA expression, a saved
  // register rule other than "at CFA + offset" (register, value, expression,
  // undefined), a rule for SP, a signal frame, offsets beyond int16 (saved)
  // / int32 (CFA), or more than kMaxSaved saved registers. An undefined
  // return address (the outermost frame: _start, clone) is expressible.
  static std::optional<CompactRow> From(const Row& row, const arch::ArchInfo& info);

  // An empty row (CFA = r0, RA at CFA): only a placeholder in tables.
  CompactRow() = default;

  // What ApplyInPlace needs of the arch, computed once per unwind so the
  // step loop keeps it in registers.
  struct ArchFacts {
    explicit ArchFacts(const arch::ArchInfo& info)
        : pc(info.pc),
          sp(info.sp),
          keep_valid(info.num_regs >= 64 ? ~uint64_t{0}
                                         : (uint64_t{1} << info.num_regs) - 1),
          mask(info.address_size == 4 ? 0xffffffffu : ~uint64_t{0}) {}
    int pc;
    int sp;
    uint64_t keep_valid;  // columns ApplyRow tracks: [0, num_regs)
    uint64_t mask;        // the address width
  };

  enum class Result : uint8_t {
    kCaller,     // `regs` are now the caller's
    kOutermost,  // the return address is undefined: no caller
    kFailed,     // `regs` unchanged: the general path will say why
  };
  // Replaces the callee's registers `regs` by the caller's, reading saved
  // values with `read(addr, &value)` (false: unreadable). Fails if the CFA
  // register is not valid, the CFA's address wraps or leaves the target's
  // address width, or the return address cannot be read; a callee-saved
  // register whose slot cannot be read becomes unknown, one whose slot
  // lies below `restored_below` keeps its value (rules.h), as in ApplyRow.
  template <typename ReadWord>
  Result ApplyInPlace(arch::RegisterSet& regs, const ArchFacts& arch,
                      uint64_t restored_below, ReadWord&& read) const;

  // The register the CFA is an offset from.
  int cfa_reg() const { return cfa_reg_; }
  // What ApplyInPlace reads: the return address at CFA + ra_offset()
  // (unless undefined), and each saved register's slot.
  bool ra_undefined() const { return ra_undefined_; }
  int ra_offset() const { return ra_offset_; }
  int ra_reg() const { return ra_reg_; }
  // The offset from the CFA of `reg`'s slot, if the row saves it.
  std::optional<int> SavedOffset(int reg) const {
    for (int i = 0; i < num_saved_; ++i) {
      if (saved_reg_[i] == reg) return saved_offset_[i];
    }
    return std::nullopt;
  }

 private:
  int32_t cfa_offset_ = 0;
  uint8_t cfa_reg_ = 0;
  uint8_t ra_reg_ = 0;
  int16_t ra_offset_ = 0;
  bool ra_undefined_ = false;
  uint8_t num_saved_ = 0;
  uint8_t saved_reg_[kMaxSaved] = {};
  int16_t saved_offset_[kMaxSaved] = {};
};

template <typename ReadWord>
CompactRow::Result CompactRow::ApplyInPlace(arch::RegisterSet& regs,
                                            const ArchFacts& arch,
                                            uint64_t restored_below,
                                            ReadWord&& read) const {
  if (!regs.Valid(cfa_reg_)) return Result::kFailed;
  const uint64_t mask = arch.mask;
  // The rules' meaning is rules.h's, as ApplyRow's.
  uint64_t cfa = 0;
  if (!rules::OffsetAddress(regs.GetUnchecked(cfa_reg_), cfa_offset_, mask, &cfa)) {
    return Result::kFailed;
  }
  uint64_t ra = 0;
  if (!ra_undefined_ && !rules::ReadSavedAt(cfa, ra_offset_, mask, read, &ra)) {
    return Result::kFailed;
  }
  if (ra_undefined_) return Result::kOutermost;
  uint64_t saved[kMaxSaved];
  uint32_t unknown = 0;  // bit i: saved_reg_[i]'s slot could not be read
  uint32_t kept = 0;     // bit i: saved_reg_[i] was popped already
  for (int i = 0; i < num_saved_; ++i) {
    switch (rules::ReadCalleeSaved(cfa, saved_offset_[i], mask, restored_below, read,
                                   &saved[i])) {
      case rules::Saved::kRead:
        break;
      case rules::Saved::kRestored:
        kept |= uint32_t{1} << i;
        break;
      case rules::Saved::kUnknown:
        unknown |= uint32_t{1} << i;
        break;
    }
  }
  // Every rule read the callee's registers; now they become the caller's.
  // Columns past num_regs are not tracked (ApplyRow drops them too).
  regs.KeepValid(arch.keep_valid);
  // Every register number was checked by From; every value is a word read
  // at the target's width or the CFA, checked against `mask` above.
  for (int i = 0; i < num_saved_; ++i) {
    if ((unknown >> i) & 1) {
      regs.Invalidate(saved_reg_[i]);
    } else if (((kept >> i) & 1) == 0) {
      regs.SetUnchecked(saved_reg_[i], saved[i]);
    }
  }
  regs.SetUnchecked(ra_reg_, ra);
  regs.SetUnchecked(arch.pc, ra);
  regs.SetUnchecked(arch.sp, cfa);
  return Result::kCaller;
}

}  // namespace unwindd::unwinder

#endif  // UNWINDD_UNWINDER_CFI_COMPACT_ROW_H_
