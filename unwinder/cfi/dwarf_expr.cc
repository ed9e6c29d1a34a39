#include "unwinder/cfi/dwarf_expr.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "memory/byte_reader.h"
#include "unwinder/cfi/encoding.h"

namespace unwindd::unwinder {
namespace {

// DWARF 5 §7.7.1, table 7.9.
enum Op : uint8_t {
  kAddr = 0x03,
  kDeref = 0x06,
  kConst1u = 0x08,
  kConst8s = 0x0f,
  kConstu = 0x10,
  kConsts = 0x11,
  kDup = 0x12,
  kDrop = 0x13,
  kOver = 0x14,
  kPick = 0x15,
  kSwap = 0x16,
  kRot = 0x17,
  kXderef = 0x18,
  kAbs = 0x19,
  kAnd = 0x1a,
  kDiv = 0x1b,
  kMinus = 0x1c,
  kMod = 0x1d,
  kMul = 0x1e,
  kNeg = 0x1f,
  kNot = 0x20,
  kOr = 0x21,
  kPlus = 0x22,
  kPlusUconst = 0x23,
  kShl = 0x24,
  kShr = 0x25,
  kShra = 0x26,
  kXor = 0x27,
  kBra = 0x28,
  kEq = 0x29,
  kGe = 0x2a,
  kGt = 0x2b,
  kLe = 0x2c,
  kLt = 0x2d,
  kNe = 0x2e,
  kSkip = 0x2f,
  kLit0 = 0x30,
  kLit31 = 0x4f,
  kReg0 = 0x50,
  kReg31 = 0x6f,
  kBreg0 = 0x70,
  kBreg31 = 0x8f,
  kRegx = 0x90,
  kFbreg = 0x91,
  kBregx = 0x92,
  kPiece = 0x93,
  kDerefSize = 0x94,
  kXderefSize = 0x95,
  kNop = 0x96,
  kPushObjectAddress = 0x97,
  kCall2 = 0x98,
  kCall4 = 0x99,
  kCallRef = 0x9a,
  kFormTlsAddress = 0x9b,
  kCallFrameCfa = 0x9c,
  kBitPiece = 0x9d,
  kImplicitValue = 0x9e,
  kStackValue = 0x9f,
  kGnuPushTlsAddress = 0xe0,
  kGnuEncodedAddr = 0xf1,
};

// Why an op that exists in DWARF is refused here, or nullptr if unknown.
const char* UnsupportedReason(uint8_t op) {
  switch (op) {
    case kFbreg:
      return "DW_OP_fbreg: there is no frame base in CFI";
    case kPiece:
    case kBitPiece:
      return "DW_OP_piece/bit_piece: composite locations are not values";
    case kPushObjectAddress:
      return "DW_OP_push_object_address: no object in CFI";
    case kCall2:
    case kCall4:
    case kCallRef:
      return "DW_OP_call*: needs .debug_info DIEs";
    case kFormTlsAddress:
    case kGnuPushTlsAddress:
      return "TLS addresses need the thread's TLS block";
    case kCallFrameCfa:
      return "DW_OP_call_frame_cfa: not allowed in CFI (DWARF 5 §6.4.2)";
    case kImplicitValue:
    case kStackValue:
      return "DW_OP_implicit_value/stack_value: not meaningful in CFI";
    default:
      return nullptr;
  }
}

class Evaluator {
 public:
  Evaluator(absl::Span<const uint8_t> expr, const ExpressionContext& ctx)
      : r_(expr), ctx_(ctx) {
    addr_size_ = arch::GetArchInfo(ctx.arch).address_size;
    mask_ = addr_size_ == 4 ? uint64_t{0xffffffff} : ~uint64_t{0};
  }

  absl::StatusOr<uint64_t> Run(std::optional<uint64_t> initial) {
    if (initial.has_value()) {
      if (absl::Status s = Push(*initial); !s.ok()) return s;
    }
    // Each op either consumes bytes or branches; the budget bounds loops.
    int executed = 0;
    while (!r_.AtEnd()) {
      op_offset_ = r_.offset();
      op_ = r_.data()[op_offset_];
      if (++executed > kMaxExpressionOps) {
        return Error(absl::StatusCode::kDataLoss,
                     absl::StrFormat("more than %d operations executed",
                                     kMaxExpressionOps));
      }
      if (absl::Status s = r_.Skip(1); !s.ok()) return Wrap(s);
      if (absl::Status s = Step(); !s.ok()) return s;
    }
    if (depth_ == 0) {
      return absl::DataLossError("DWARF expression left the stack empty");
    }
    return stack_[depth_ - 1];
  }

 private:
  // Generic-type arithmetic (DWARF 5 §2.5.1): values are address-sized, so
  // x86 wraps at 32 bits and signed ops see bit 31 as the sign.
  int64_t Signed(uint64_t v) const {
    return addr_size_ == 4 ? int64_t{static_cast<int32_t>(v)}
                           : static_cast<int64_t>(v);
  }

  absl::Status Error(absl::StatusCode code, absl::string_view what) const {
    return absl::Status(
        code, absl::StrFormat("DW_OP 0x%02x at expression offset %u: %s", op_,
                              op_offset_, what));
  }
  absl::Status Wrap(const absl::Status& s) const {
    return Error(s.code(), s.message());
  }

  absl::Status Push(uint64_t v) {
    if (depth_ >= kMaxExpressionStack) {
      return Error(absl::StatusCode::kDataLoss, "expression stack overflow");
    }
    stack_[depth_++] = v & mask_;
    return absl::OkStatus();
  }
  absl::Status Need(size_t n) const {
    if (depth_ < n) {
      return Error(absl::StatusCode::kDataLoss,
                   absl::StrFormat("stack underflow: needs %u entries, has %u",
                                   n, depth_));
    }
    return absl::OkStatus();
  }
  uint64_t Pop() { return stack_[--depth_]; }  // after Need()

  absl::Status Step();
  absl::Status Literal(uint8_t op);
  absl::Status StackOp(uint8_t op);
  absl::Status Unary(uint8_t op);
  absl::Status Binary(uint8_t op);
  absl::Status Branch(bool conditional);
  absl::Status Register(uint64_t reg, int64_t offset, bool plain);
  absl::Status Deref(int size, bool has_address_space);
  absl::Status EncodedAddr();

  memory::ByteReader r_;
  const ExpressionContext& ctx_;
  int addr_size_ = 8;
  uint64_t mask_ = ~uint64_t{0};
  std::array<uint64_t, kMaxExpressionStack> stack_{};
  size_t depth_ = 0;
  size_t op_offset_ = 0;
  uint8_t op_ = 0;
};

absl::Status Evaluator::Step() {
  const uint8_t op = op_;
  if (op >= kLit0 && op <= kLit31) return Push(op - kLit0);
  if (op >= kReg0 && op <= kReg31) return Register(op - kReg0, 0, true);
  if (op >= kBreg0 && op <= kBreg31) {
    absl::StatusOr<int64_t> off = r_.SLEB128();
    if (!off.ok()) return Wrap(off.status());
    return Register(op - kBreg0, *off, false);
  }
  if ((op >= kConst1u && op <= kConsts) || op == kAddr) return Literal(op);
  if (op >= kDup && op <= kRot) return StackOp(op);
  if (op == kAbs || op == kNeg || op == kNot) return Unary(op);
  if ((op >= kAnd && op <= kXor && op != kPlusUconst) ||
      (op >= kEq && op <= kNe)) {
    return Binary(op);
  }
  switch (op) {
    case kPlusUconst: {
      absl::StatusOr<uint64_t> n = r_.ULEB128();
      if (!n.ok()) return Wrap(n.status());
      if (absl::Status s = Need(1); !s.ok()) return s;
      return Push(Pop() + *n);
    }
    case kBra:
      return Branch(true);
    case kSkip:
      return Branch(false);
    case kRegx:
    case kBregx: {
      absl::StatusOr<uint64_t> reg = r_.ULEB128();
      if (!reg.ok()) return Wrap(reg.status());
      if (op == kRegx) return Register(*reg, 0, true);
      absl::StatusOr<int64_t> off = r_.SLEB128();
      if (!off.ok()) return Wrap(off.status());
      return Register(*reg, *off, false);
    }
    case kDeref:
      return Deref(addr_size_, false);
    case kXderef:
      return Deref(addr_size_, true);
    case kDerefSize:
    case kXderefSize: {
      absl::StatusOr<uint8_t> size = r_.U8();
      if (!size.ok()) return Wrap(size.status());
      // DWARF 5 §2.5.1.3: no larger than the generic type.
      if (*size == 0 || *size > addr_size_) {
        return Error(absl::StatusCode::kDataLoss,
                     absl::StrFormat("bad dereference size %d", *size));
      }
      return Deref(*size, op == kXderefSize);
    }
    case kNop:
      return absl::OkStatus();
    case kGnuEncodedAddr:
      return EncodedAddr();
    default:
      break;
  }
  const char* reason = UnsupportedReason(op);
  return Error(absl::StatusCode::kUnimplemented,
               reason != nullptr ? reason : "unknown or unsupported operation");
}

// DW_OP_addr and the constants (DWARF 5 §2.5.1.1).
absl::Status Evaluator::Literal(uint8_t op) {
  absl::StatusOr<uint64_t> v;
  switch (op) {
    case kAddr:
      v = addr_size_ == 4 ? absl::StatusOr<uint64_t>(r_.U32()) : r_.U64();
      break;
    case 0x08:  // DW_OP_const1u .. DW_OP_const8s: signed ones sign-extend.
      v = r_.U8();
      break;
    case 0x09:
      v = r_.S8();
      break;
    case 0x0a:
      v = r_.U16();
      break;
    case 0x0b:
      v = r_.S16();
      break;
    case 0x0c:
      v = r_.U32();
      break;
    case 0x0d:
      v = r_.S32();
      break;
    case 0x0e:
      v = r_.U64();
      break;
    case kConst8s:
      v = r_.S64();
      break;
    case kConstu:
      v = r_.ULEB128();
      break;
    default:  // kConsts
      v = r_.SLEB128();
      break;
  }
  if (!v.ok()) return Wrap(v.status());
  // DW_OP_addr's operand is a file address: relocate it by the load bias.
  return Push(op == kAddr ? *v + ctx_.load_bias : *v);
}

// dup, drop, over, pick, swap, rot (DWARF 5 §2.5.1.3).
absl::Status Evaluator::StackOp(uint8_t op) {
  switch (op) {
    case kDup:
      if (absl::Status s = Need(1); !s.ok()) return s;
      return Push(stack_[depth_ - 1]);
    case kDrop:
      if (absl::Status s = Need(1); !s.ok()) return s;
      Pop();
      return absl::OkStatus();
    case kOver:
      if (absl::Status s = Need(2); !s.ok()) return s;
      return Push(stack_[depth_ - 2]);
    case kPick: {
      absl::StatusOr<uint8_t> i = r_.U8();
      if (!i.ok()) return Wrap(i.status());
      if (absl::Status s = Need(size_t{*i} + 1); !s.ok()) return s;
      return Push(stack_[depth_ - 1 - *i]);
    }
    case kSwap:
      if (absl::Status s = Need(2); !s.ok()) return s;
      std::swap(stack_[depth_ - 1], stack_[depth_ - 2]);
      return absl::OkStatus();
    default: {  // kRot: top -> third, second -> top, third -> second.
      if (absl::Status s = Need(3); !s.ok()) return s;
      const uint64_t top = stack_[depth_ - 1];
      stack_[depth_ - 1] = stack_[depth_ - 2];
      stack_[depth_ - 2] = stack_[depth_ - 3];
      stack_[depth_ - 3] = top;
      return absl::OkStatus();
    }
  }
}

absl::Status Evaluator::Unary(uint8_t op) {
  if (absl::Status s = Need(1); !s.ok()) return s;
  const uint64_t v = Pop();
  switch (op) {
    case kAbs: {
      const int64_t sv = Signed(v);
      // |INT64_MIN| wraps to itself, as two's complement negation does.
      return Push(sv < 0 ? uint64_t{0} - v : v);
    }
    case kNeg:
      return Push(uint64_t{0} - v);
    default:  // kNot
      return Push(~v);
  }
}

// Pops the top (b) and the second (a) entry and pushes `a op b`. Shifts by
// the width or more give 0 (or the sign for shra) rather than C++ UB.
absl::Status Evaluator::Binary(uint8_t op) {
  if (absl::Status s = Need(2); !s.ok()) return s;
  const uint64_t b = Pop();
  const uint64_t a = Pop();
  const int64_t sa = Signed(a);
  const int64_t sb = Signed(b);
  switch (op) {
    case kAnd:
      return Push(a & b);
    case kOr:
      return Push(a | b);
    case kXor:
      return Push(a ^ b);
    case kPlus:
      return Push(a + b);
    case kMinus:
      return Push(a - b);
    case kMul:
      return Push(a * b);
    case kDiv:
      if (b == 0) return Error(absl::StatusCode::kDataLoss, "division by zero");
      // INT64_MIN / -1 overflows: the wrapped result is the negation.
      return Push(sb == -1 ? uint64_t{0} - a : static_cast<uint64_t>(sa / sb));
    case kMod:
      // Unsigned, as gdb does for the generic type.
      if (b == 0) return Error(absl::StatusCode::kDataLoss, "modulo by zero");
      return Push(a % b);
    case kShl:
      return Push(b >= 64 ? 0 : a << b);
    case kShr:
      return Push(b >= 64 ? 0 : a >> b);
    case kShra:
      return Push(static_cast<uint64_t>(sa >> (b >= 63 ? 63 : b)));
    case kEq:
      return Push(sa == sb);
    case kGe:
      return Push(sa >= sb);
    case kGt:
      return Push(sa > sb);
    case kLe:
      return Push(sa <= sb);
    case kLt:
      return Push(sa < sb);
    default:
      return Push(sa != sb);  // kNe
  }
}

// DW_OP_bra / DW_OP_skip: a 2-byte signed offset from the end of the operand.
// Landing exactly at the end of the expression ends it.
absl::Status Evaluator::Branch(bool conditional) {
  absl::StatusOr<int16_t> off = r_.S16();
  if (!off.ok()) return Wrap(off.status());
  if (conditional) {
    if (absl::Status s = Need(1); !s.ok()) return s;
    if (Pop() == 0) return absl::OkStatus();
  }
  const int64_t target = static_cast<int64_t>(r_.offset()) + *off;
  if (target < 0 || target > static_cast<int64_t>(r_.size())) {
    return Error(absl::StatusCode::kDataLoss,
                 absl::StrFormat("branch target %d outside the %u-byte "
                                 "expression",
                                 target, r_.size()));
  }
  if (absl::Status s = r_.Seek(static_cast<size_t>(target)); !s.ok()) {
    return Wrap(s);
  }
  return absl::OkStatus();
}

// DW_OP_bregN / bregx push register + offset. DW_OP_regN / regx name a
// *location* (the register itself) in DWARF 5 §2.6.1.1.3, which has no
// meaning inside a CFI expression; like libunwindstack and gdb's CFI
// evaluator we push the register's value instead.
absl::Status Evaluator::Register(uint64_t reg, int64_t offset, bool plain) {
  if (ctx_.regs == nullptr || reg >= arch::kMaxRegisters ||
      !ctx_.regs->Valid(static_cast<int>(reg))) {
    absl::string_view name =
        reg < arch::kMaxRegisters
            ? arch::RegisterName(ctx_.arch, static_cast<int>(reg))
            : "";
    // A register without a known value (its save slot in the frame below
    // could not be read: cfi/rules.h) is like unreadable memory.
    return Error(reg < arch::kMaxRegisters ? absl::StatusCode::kOutOfRange
                                           : absl::StatusCode::kUnimplemented,
                 absl::StrFormat("%s register %u (%s) has no known value",
                                 plain ? "DW_OP_reg" : "DW_OP_breg", reg,
                                 name.empty() ? "?" : name));
  }
  return Push(ctx_.regs->Get(static_cast<int>(reg)) +
              static_cast<uint64_t>(offset));
}

// DW_OP_deref{,_size} and DW_OP_xderef{,_size}: the x forms pop an
// address-space id under the address, which Linux targets do not have.
absl::Status Evaluator::Deref(int size, bool has_address_space) {
  if (absl::Status s = Need(has_address_space ? 2 : 1); !s.ok()) return s;
  const uint64_t addr = Pop();
  if (has_address_space) Pop();
  if (ctx_.memory == nullptr) {
    return Error(absl::StatusCode::kFailedPrecondition, "no target memory");
  }
  uint8_t buf[8] = {};
  absl::Status s = ctx_.memory->ReadFully(addr, absl::MakeSpan(buf, size));
  if (!s.ok()) {
    return Error(s.code(),
                 absl::StrFormat("dereferencing 0x%x: %s", addr, s.message()));
  }
  uint64_t v = 0;
  for (int i = 0; i < size; ++i) v |= uint64_t{buf[i]} << (8 * i);
  return Push(v);
}

// DW_OP_GNU_encoded_addr (gcc dwarf2.def): a DW_EH_PE encoding byte, then a
// pointer in that encoding. The evaluator does not know where the
// expression's bytes sit in the file, nor the text/data/function bases, so
// only absolute applications are accepted; their value is a file address and
// gets the load bias. With DW_EH_PE_indirect that biased address is read from
// target memory, and the pointer found there is already a runtime address.
absl::Status Evaluator::EncodedAddr() {
  absl::StatusOr<uint8_t> enc = r_.U8();
  if (!enc.ok()) return Wrap(enc.status());
  if (*enc == kPeOmit) {
    return Error(absl::StatusCode::kDataLoss, "DW_EH_PE_omit encoding");
  }
  if ((*enc & 0x70) != kPeAbsptr) {
    return Error(absl::StatusCode::kUnimplemented,
                 absl::StrFormat("DW_OP_GNU_encoded_addr with relative "
                                 "encoding 0x%02x",
                                 *enc));
  }
  absl::StatusOr<EncodedPointer> p =
      ReadEncodedPointer(r_, *enc, addr_size_, EncodingBases{});
  if (!p.ok()) return Wrap(p.status());
  const uint64_t addr = (p->value + ctx_.load_bias) & mask_;
  if (!p->indirect) return Push(addr);
  if (absl::Status s = Push(addr); !s.ok()) return s;
  return Deref(addr_size_, false);
}

}  // namespace

absl::StatusOr<uint64_t> EvaluateExpression(absl::Span<const uint8_t> expr,
                                            const ExpressionContext& ctx,
                                            std::optional<uint64_t> initial) {
  return Evaluator(expr, ctx).Run(initial);
}

}  // namespace unwindd::unwinder
