#include "unwinder/sframe/to_row.h"

#include "absl/strings/str_format.h"
#include "arch/arch_ops.h"

namespace unwindd::unwinder::sframe {
namespace {

using Kind = RegisterRule::Kind;

// The registers an FRE talks about, as DWARF numbers.
struct Regs {
  int sp;
  int fp;
  int ra;  // the return-address column: x86_64 16 (the PC slot), aarch64 x30
};

Regs RegsOf(arch::Arch a) {
  const arch::ArchInfo& info = arch::GetArchInfo(a);
  return Regs{info.sp, info.fp, info.ra};
}

absl::Status Bad(const Fde& fde, const Fre& fre, absl::string_view what) {
  return absl::DataLossError(
      absl::StrFormat("SFrame FDE %u (function 0x%x), FRE at +0x%x: %s",
                      fde.index, fde.func_start, fre.start, what));
}

// §3.1 Default FDEs.
absl::Status DefaultRules(const Header& h, const Fde& fde, const Fre& fre,
                          const Regs& r, Row& row) {
  row.cfa.kind = CfaRule::Kind::kRegOffset;
  row.cfa.reg = static_cast<uint16_t>(fre.cfa_base_sp ? r.sp : r.fp);
  row.cfa.offset = fre.Signed(0);
  int next = 1;
  if (h.cfa_fixed_ra_offset != 0) {
    row.regs[r.ra] = {Kind::kOffset, h.cfa_fixed_ra_offset, {}};
  } else if (fre.num_words > next) {
    row.regs[r.ra] = {Kind::kOffset, fre.Signed(next++), {}};
  }  // else: the RA has not left its register (aarch64 LR) yet
  if (h.cfa_fixed_fp_offset != 0) {
    row.regs[r.fp] = {Kind::kOffset, h.cfa_fixed_fp_offset, {}};
  } else if (fre.num_words > next) {
    row.regs[r.fp] = {Kind::kOffset, fre.Signed(next++), {}};
  }
  if (fre.num_words > next) {
    return Bad(fde, fre,
               absl::StrFormat("%d data words, at most %d expected",
                               fre.num_words, next));
  }
  return absl::OkStatus();
}

// One flex (control, offset) pair as a register rule (§3.2).
absl::StatusOr<RegisterRule> FlexRule(uint32_t control, int32_t offset,
                                      const arch::ArchInfo& info,
                                      ExprArena& arena) {
  const bool reg_p = (control & 1) != 0;
  const bool deref = (control & 2) != 0;
  const uint32_t reg = control >> 3;
  if (!reg_p) return RegisterRule{Kind::kOffset, offset, {}};  // *(CFA + off)
  if (reg >= static_cast<uint32_t>(info.num_regs)) {
    return absl::DataLossError(absl::StrFormat(
        "SFrame flex rule names register %u, not an %s register", reg,
        info.name));
  }
  if (!deref && offset == 0) return RegisterRule{Kind::kRegister, reg, {}};
  absl::StatusOr<absl::Span<const uint8_t>> e = arena.Breg(reg, offset);
  if (!e.ok()) return e.status();
  // kExpression: the value at reg + off; kValExpression: reg + off itself.
  return RegisterRule{deref ? Kind::kExpression : Kind::kValExpression, 0, *e};
}

// §3.2 Flexible FDEs (v3): CFA pair, then RA pair or padding, then FP pair.
absl::Status FlexRules(const Header& h, const Fde& fde, const Fre& fre,
                       const Regs& r, const arch::ArchInfo& info,
                       ExprArena& arena, Row& row) {
  if (fre.num_words < 2) return Bad(fde, fre, "flex FRE without a CFA rule");
  const uint32_t cfa_control = fre.Unsigned(0);
  const uint32_t cfa_reg = cfa_control >> 3;
  if ((cfa_control & 1) == 0 ||
      cfa_reg >= static_cast<uint32_t>(info.num_regs)) {
    return Bad(fde, fre,
               absl::StrFormat("flex CFA control word 0x%x is not "
                               "register-based",
                               cfa_control));
  }
  if ((cfa_control & 2) != 0) {
    absl::StatusOr<absl::Span<const uint8_t>> e =
        arena.Breg(cfa_reg, fre.Signed(1), /*deref=*/true);
    if (!e.ok()) return e.status();
    row.cfa = {CfaRule::Kind::kExpression, 0, 0, *e};
  } else {
    row.cfa = {CfaRule::Kind::kRegOffset,
               static_cast<uint16_t>(cfa_reg),
               fre.Signed(1),
               {}};
  }
  if (h.cfa_fixed_ra_offset != 0) {
    row.regs[r.ra] = {Kind::kOffset, h.cfa_fixed_ra_offset, {}};
  }
  if (h.cfa_fixed_fp_offset != 0) {
    row.regs[r.fp] = {Kind::kOffset, h.cfa_fixed_fp_offset, {}};
  }
  int next = 2;
  for (int target : {r.ra, r.fp}) {
    if (fre.num_words <= next) break;
    const uint32_t control = fre.Unsigned(next);
    if (control == 0) {  // padding: this one keeps its default rule
      next += 1;
      continue;
    }
    if (fre.num_words <= next + 1)
      return Bad(fde, fre, "flex rule without offset");
    absl::StatusOr<RegisterRule> rule =
        FlexRule(control, fre.Signed(next + 1), info, arena);
    if (!rule.ok()) return rule.status();
    row.regs[target] = *rule;
    next += 2;
  }
  if (fre.num_words > next) {
    return Bad(fde, fre,
               absl::StrFormat("%d data words, %d used", fre.num_words, next));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Row> FreToRow(const Header& header, const Fde& fde,
                             const Fre& fre, uint64_t pc_lo, uint64_t pc_hi,
                             ExprArena& arena) {
  absl::StatusOr<arch::Arch> a = ArchOfAbi(header.abi);
  if (!a.ok()) return a.status();
  const arch::ArchInfo& info = arch::GetArchInfo(*a);
  const Regs r = RegsOf(*a);
  Row row;
  row.pc_lo = pc_lo;
  row.pc_hi = pc_hi;
  row.return_address_register = static_cast<uint16_t>(r.ra);
  row.signal_frame = fde.signal_frame;
  row.ra_signed = arch::GetArchOps(*a).signs_return_addresses && fre.mangled_ra;
  if (fre.ra_undefined()) {
    // The outermost frame (e.g. _start): a CFA that is never used, and no RA.
    row.cfa = {CfaRule::Kind::kRegOffset, static_cast<uint16_t>(r.sp), 0, {}};
    row.regs[r.ra].kind = Kind::kUndefined;
    return row;
  }
  absl::Status s = fde.fde_type == kFdeTypeFlex
                       ? FlexRules(header, fde, fre, r, info, arena, row)
                       : DefaultRules(header, fde, fre, r, row);
  if (!s.ok()) return s;
  return row;
}

}  // namespace unwindd::unwinder::sframe
