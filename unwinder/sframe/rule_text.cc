#include "unwinder/sframe/rule_text.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "unwinder/sframe/expr_arena.h"

namespace unwindd::unwinder::sframe {
namespace {

std::string Reg(arch::Arch a, int reg) {
  absl::string_view name = arch::RegisterName(a, reg);
  return name.empty() ? absl::StrCat("r", reg) : std::string(name);
}

std::string Offset(int64_t v) { return absl::StrFormat("%+d", v); }

// "reg+off" for DW_OP_breg<n> <sleb>, with "(...)" around it when followed
// by DW_OP_deref; nullopt for anything else.
std::optional<std::string> BregText(absl::Span<const uint8_t> e, arch::Arch a) {
  std::optional<BregRule> b = ParseBreg(e);
  if (!b.has_value()) return std::nullopt;
  std::string text = Reg(a, static_cast<int>(b->reg)) + Offset(b->offset);
  return b->deref ? "(" + text + ")" : text;
}

std::string ExprText(absl::Span<const uint8_t> e, arch::Arch a) {
  if (std::optional<std::string> b = BregText(e, a)) return *b;
  std::string hex = "expr:";
  for (size_t i = 0; i < e.size() && i < 12; ++i)
    absl::StrAppendFormat(&hex, "%02x", e[i]);
  if (e.size() > 12) hex += "..";
  return hex;
}

std::string CfaText(const CfaRule& c, arch::Arch a) {
  switch (c.kind) {
    case CfaRule::Kind::kRegOffset:
      return Reg(a, c.reg) + Offset(c.offset);
    case CfaRule::Kind::kExpression:
      return ExprText(c.expr, a);
    case CfaRule::Kind::kUndefined:
      break;
  }
  return "undef";
}

std::string RuleText(const RegisterRule& r, arch::Arch a) {
  using Kind = RegisterRule::Kind;
  switch (r.kind) {
    case Kind::kUnspecified:
    case Kind::kSameValue:
      return "same";
    case Kind::kUndefined:
      return "undef";
    case Kind::kOffset:
      return "[CFA" + Offset(r.value) + "]";
    case Kind::kValOffset:
      return "CFA" + Offset(r.value);
    case Kind::kRegister:
      return Reg(a, static_cast<int>(r.value));
    case Kind::kExpression:
      return "[" + ExprText(r.expr, a) + "]";
    case Kind::kValExpression:
      return ExprText(r.expr, a);
  }
  return "?";
}

}  // namespace

std::string RowText(const Row& row, arch::Arch a) {
  const arch::ArchInfo& info = arch::GetArchInfo(a);
  const int ra = row.return_address_register < arch::kMaxRegisters
                     ? row.return_address_register
                     : info.ra;
  std::string out = absl::StrCat("CFA=", CfaText(row.cfa, a),
                                 " RA=", RuleText(row.regs[ra], a),
                                 " FP=", RuleText(row.regs[info.fp], a));
  if (row.ra_signed) out += " RA-signed";
  return out;
}

}  // namespace unwindd::unwinder::sframe
