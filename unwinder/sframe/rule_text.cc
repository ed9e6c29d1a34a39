#include "unwinder/sframe/rule_text.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

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
  if (e.empty() || e[0] < 0x70 || e[0] > 0x8f) return std::nullopt;
  int64_t v = 0;
  size_t i = 1;
  int shift = 0;
  uint8_t byte = 0x80;
  while (i < e.size() && (byte & 0x80) && shift < 63) {
    byte = e[i++];
    v |= static_cast<int64_t>(byte & 0x7f) << shift;
    shift += 7;
  }
  if (byte & 0x80) return std::nullopt;
  if (shift < 64 && (byte & 0x40)) v |= -(int64_t{1} << shift);
  std::string text = Reg(a, e[0] - 0x70) + Offset(v);
  if (i == e.size()) return text;
  if (i + 1 == e.size() && e[i] == 0x06) return "(" + text + ")";
  return std::nullopt;
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
