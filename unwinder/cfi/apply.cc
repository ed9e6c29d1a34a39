#include "unwinder/cfi/apply.h"

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "arch/arch.h"
#include "unwinder/cfi/dwarf_expr.h"
#include "unwinder/cfi/rules.h"

namespace unwindd::unwinder {
namespace {

using Kind = RegisterRule::Kind;

std::string RegName(arch::Arch a, int reg) {
  absl::string_view name = arch::RegisterName(a, reg);
  return absl::StrFormat("r%d (%s)", reg, name.empty() ? "?" : name);
}

// rules::OffsetAddress, with the error a failure means: the CFI is wrong for
// this frame. `what` names the computation for the error message; it is a
// callable so that the string is only built when there is an error.
template <typename What>
absl::StatusOr<uint64_t> AddOffset(uint64_t base, int64_t offset, uint64_t mask,
                                   What what) {
  uint64_t out = 0;
  if (!rules::OffsetAddress(base, offset, mask, &out)) {
    return absl::DataLossError(absl::StrFormat(
        "%s: 0x%x %+d wraps around the address space", what(), base, offset));
  }
  return out;
}

// The value of one register rule (DWARF 5 §6.4.1), computed from the
// *callee's* registers only; nullopt means "no value" (the caller's register
// is invalid).
struct RuleValue {
  std::optional<uint64_t> value;
  bool undefined = false;  // the rule was DW_CFA_undefined
};

class Applier {
 public:
  Applier(const Row& row, const arch::RegisterSet& regs, memory::Memory& mem,
          uint64_t load_bias, uint64_t restored_below)
      : row_(row),
        regs_(regs),
        mem_(mem),
        info_(regs.info()),
        ctx_{&regs, &mem, regs.arch(), load_bias},
        restored_below_(restored_below) {}

  absl::StatusOr<ApplyResult> Run();

 private:
  absl::StatusOr<uint64_t> Cfa() const;
  absl::StatusOr<RuleValue> Eval(int reg) const;
  absl::StatusOr<uint64_t> ReadSaved(int reg, uint64_t addr) const;

  const Row& row_;
  const arch::RegisterSet& regs_;
  memory::Memory& mem_;
  const arch::ArchInfo& info_;
  ExpressionContext ctx_;
  const uint64_t restored_below_;  // rules::ReadCalleeSaved
  uint64_t cfa_ = 0;
};

absl::StatusOr<uint64_t> Applier::Cfa() const {
  switch (row_.cfa.kind) {
    case CfaRule::Kind::kRegOffset: {
      const int reg = row_.cfa.reg;
      if (!regs_.Valid(reg)) {
        // Unknown: e.g. its save slot in the frame below could not be read.
        return absl::OutOfRangeError(absl::StrFormat(
            "CFA register %s has no known value", RegName(regs_.arch(), reg)));
      }
      return AddOffset(regs_.Get(reg), row_.cfa.offset, regs_.mask(),
                       [] { return std::string("CFA"); });
    }
    case CfaRule::Kind::kExpression: {
      absl::StatusOr<uint64_t> v =
          EvaluateExpression(row_.cfa.expr, ctx_, std::nullopt);
      if (!v.ok()) {
        return absl::Status(
            v.status().code(),
            absl::StrCat("CFA expression: ", v.status().message()));
      }
      return *v & regs_.mask();
    }
    case CfaRule::Kind::kUndefined:
      break;
  }
  return absl::FailedPreconditionError(absl::StrFormat(
      "row for [0x%x, 0x%x) has no CFA rule", row_.pc_lo, row_.pc_hi));
}

absl::StatusOr<uint64_t> Applier::ReadSaved(int reg, uint64_t addr) const {
  absl::StatusOr<uint64_t> v = mem_.ReadWord(addr, info_.address_size);
  if (!v.ok()) {
    return absl::OutOfRangeError(absl::StrFormat("reading saved %s at 0x%x: %s",
                                                 RegName(regs_.arch(), reg),
                                                 addr, v.status().message()));
  }
  return *v;
}

absl::StatusOr<RuleValue> Applier::Eval(int reg) const {
  const RegisterRule& rule = row_.regs[reg];
  auto callee = [this](int r) -> std::optional<uint64_t> {
    if (!regs_.Valid(r)) return std::nullopt;
    return regs_.Get(r);
  };
  switch (rule.kind) {
    case Kind::kUnspecified:  // gdb/elfutils: keep the callee's value
    case Kind::kSameValue:
      return RuleValue{callee(reg), false};
    case Kind::kUndefined:
      return RuleValue{std::nullopt, true};
    case Kind::kRegister:
      if (rule.value < 0 || rule.value >= arch::kMaxRegisters) {
        return RuleValue{std::nullopt, false};
      }
      return RuleValue{callee(static_cast<int>(rule.value)), false};
    case Kind::kOffset:
    case Kind::kValOffset: {
      absl::StatusOr<uint64_t> addr =
          AddOffset(cfa_, rule.value, regs_.mask(), [&] {
            return absl::StrFormat("rule for %s", RegName(regs_.arch(), reg));
          });
      if (!addr.ok()) return addr.status();
      if (rule.kind == Kind::kValOffset) return RuleValue{*addr, false};
      if (reg != row_.return_address_register && *addr < restored_below_) {
        return RuleValue{callee(reg), false};  // popped already (rules.h)
      }
      absl::StatusOr<uint64_t> v = ReadSaved(reg, *addr);
      if (!v.ok()) return v.status();
      return RuleValue{*v, false};
    }
    case Kind::kExpression:
    case Kind::kValExpression: {
      absl::StatusOr<uint64_t> v = EvaluateExpression(rule.expr, ctx_, cfa_);
      if (!v.ok()) {
        return absl::Status(
            v.status().code(),
            absl::StrFormat("expression for %s: %s", RegName(regs_.arch(), reg),
                            v.status().message()));
      }
      if (rule.kind == Kind::kValExpression) return RuleValue{*v, false};
      absl::StatusOr<uint64_t> saved = ReadSaved(reg, *v & regs_.mask());
      if (!saved.ok()) return saved.status();
      return RuleValue{*saved, false};
    }
  }
  return RuleValue{std::nullopt, false};
}

absl::StatusOr<ApplyResult> Applier::Run() {
  absl::StatusOr<uint64_t> cfa = Cfa();
  if (!cfa.ok()) return cfa.status();
  cfa_ = *cfa;

  ApplyResult out;
  out.cfa = cfa_;
  out.caller = arch::RegisterSet(regs_.arch());
  // Every rule reads the callee's registers (regs_), never the partly built
  // caller set, so rules do not depend on evaluation order.
  const int ra = row_.return_address_register;
  if (ra >= arch::kMaxRegisters) {
    return absl::DataLossError(
        absl::StrFormat("return address column %d out of range", ra));
  }
  std::optional<RuleValue> ra_value;
  auto read_word = [this](uint64_t addr, uint64_t* value) {
    absl::StatusOr<uint64_t> v = mem_.ReadWord(addr, info_.address_size);
    if (!v.ok()) return false;
    *value = *v;
    return true;
  };
  for (int r = 0; r < info_.num_regs && r < arch::kMaxRegisters; ++r) {
    // Fast path for the rules nearly every row is made of: registers the
    // CFI does not mention (or says keep) are copied, and callee-saved
    // registers are read from CFA + offset (rules.h, as CompactRow does).
    // Everything else, and every error message, goes through Eval.
    const RegisterRule& rule = row_.regs[r];
    if (r != ra) {
      if (rule.kind == Kind::kUnspecified || rule.kind == Kind::kSameValue) {
        if (regs_.Valid(r)) out.caller.Set(r, regs_.Get(r));
        continue;
      }
      if (rule.kind == Kind::kOffset) {
        // An unreadable save slot leaves the register unknown, a popped
        // one keeps its value (rules.h).
        uint64_t saved = 0;
        switch (rules::ReadCalleeSaved(cfa_, rule.value, regs_.mask(), restored_below_,
                                       read_word, &saved)) {
          case rules::Saved::kRead:
            out.caller.Set(r, saved);
            break;
          case rules::Saved::kRestored:
            if (regs_.Valid(r)) out.caller.Set(r, regs_.Get(r));
            break;
          case rules::Saved::kUnknown:
            break;
        }
        continue;
      }
    }
    absl::StatusOr<RuleValue> v = Eval(r);
    if (!v.ok()) {
      // The same for a value an expression could not read: unknown, unless
      // it is the return address.
      if (r != ra && absl::IsOutOfRange(v.status())) continue;
      return v.status();
    }
    if (v->value.has_value()) out.caller.Set(r, *v->value);
    if (r == ra) ra_value = *v;
  }
  if (!ra_value.has_value()) {  // an untracked column (e.g. a CIE's custom RA)
    absl::StatusOr<RuleValue> v = Eval(ra);
    if (!v.ok()) return v.status();
    ra_value = *v;
  }

  // The caller's PC is the return address (a return address, not a PC: the
  // step loop subtracts 1 before looking it up).
  if (ra_value->undefined) {
    out.ra_undefined = true;
    out.caller.Invalidate(info_.pc);
  } else if (!ra_value->value.has_value()) {
    return absl::OutOfRangeError(
        absl::StrFormat("return address %s has no known value in this frame",
                        RegName(regs_.arch(), ra)));
  } else {
    // aarch64: when row_.ra_signed the value still carries its PAC bits; the
    // arch layer strips them, so it is stored exactly as read.
    out.caller.Set(info_.pc, *ra_value->value);
  }

  // DWARF leaves the caller's SP to the ABI; on every supported arch it is
  // the CFA unless the CFI says otherwise.
  if (row_.regs[info_.sp].kind == Kind::kUnspecified)
    out.caller.Set(info_.sp, cfa_);
  return out;
}

}  // namespace

absl::StatusOr<ApplyResult> ApplyRow(const Row& row,
                                     const arch::RegisterSet& regs,
                                     memory::Memory& memory,
                                     uint64_t load_bias,
                                     uint64_t restored_below) {
  return Applier(row, regs, memory, load_bias, restored_below).Run();
}

}  // namespace unwindd::unwinder
