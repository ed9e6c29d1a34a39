#include "unwinder/cfi/compact_row.h"

#include <limits>

namespace unwindd::unwinder {
namespace {

template <typename T>
bool Fits(int64_t v) {
  return v >= std::numeric_limits<T>::min() && v <= std::numeric_limits<T>::max();
}

}  // namespace

std::optional<CompactRow> CompactRow::From(const Row& row,
                                           const arch::ArchInfo& info) {
  using Kind = RegisterRule::Kind;
  const int num_regs = std::min(info.num_regs, arch::kMaxRegisters);
  const int ra = row.return_address_register;
  if (row.signal_frame || row.cfa.kind != CfaRule::Kind::kRegOffset ||
      row.cfa.reg >= num_regs || !Fits<int32_t>(row.cfa.offset) || ra >= num_regs ||
      row.regs[info.sp].kind != Kind::kUnspecified) {
    return std::nullopt;
  }
  const RegisterRule& ra_rule = row.regs[ra];
  const bool ra_undefined = ra_rule.kind == Kind::kUndefined;
  if (!ra_undefined && (ra_rule.kind != Kind::kOffset || !Fits<int16_t>(ra_rule.value))) {
    return std::nullopt;
  }
  CompactRow out;
  out.ra_undefined_ = ra_undefined;
  out.cfa_reg_ = static_cast<uint8_t>(row.cfa.reg);
  out.cfa_offset_ = static_cast<int32_t>(row.cfa.offset);
  out.ra_reg_ = static_cast<uint8_t>(ra);
  out.ra_offset_ = ra_undefined ? 0 : static_cast<int16_t>(ra_rule.value);
  for (int r = 0; r < num_regs; ++r) {
    if (r == ra) continue;
    const RegisterRule& rule = row.regs[r];
    switch (rule.kind) {
      case Kind::kUnspecified:
      case Kind::kSameValue:
        continue;
      case Kind::kOffset:
        if (out.num_saved_ == kMaxSaved || !Fits<int16_t>(rule.value)) {
          return std::nullopt;
        }
        out.saved_reg_[out.num_saved_] = static_cast<uint8_t>(r);
        out.saved_offset_[out.num_saved_] = static_cast<int16_t>(rule.value);
        ++out.num_saved_;
        continue;
      default:
        return std::nullopt;
    }
  }
  return out;
}

}  // namespace unwindd::unwinder
