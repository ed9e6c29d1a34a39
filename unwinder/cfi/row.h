// One row of the unwind table (DWARF 5 §6.4.1): how to find the CFA and every
// register of the caller, valid for PCs in [pc_lo, pc_hi).
//
// Rows are plain values produced by parsers (the CFA VM over .eh_frame /
// .debug_frame, the SFrame reader, the frame-pointer source) and consumed by
// Apply() (unwinder/cfi/apply.h). Addresses in a row (pc_lo/pc_hi) are in the
// *file's* address space (before load bias). Expression spans point into the
// owning module's section data and live as long as the module.
#ifndef UNWINDD_UNWINDER_CFI_ROW_H_
#define UNWINDD_UNWINDER_CFI_ROW_H_

#include <array>
#include <cstdint>

#include "absl/types/span.h"
#include "arch/arch.h"

namespace unwindd::unwinder {

struct CfaRule {
  enum class Kind : uint8_t {
    kUndefined,   // no CFA rule yet: the row is unusable
    kRegOffset,   // CFA = reg + offset
    kExpression,  // CFA = value of DWARF expression `expr`
  };
  Kind kind = Kind::kUndefined;
  uint16_t reg = 0;
  int64_t offset = 0;
  absl::Span<const uint8_t> expr;

  friend bool operator==(const CfaRule& a, const CfaRule& b) {
    return a.kind == b.kind && a.reg == b.reg && a.offset == b.offset &&
           a.expr.data() == b.expr.data() && a.expr.size() == b.expr.size();
  }
};

struct RegisterRule {
  enum class Kind : uint8_t {
    kUnspecified,    // not mentioned by the CFI: keep the callee's value
                     // (SP: the CFA) — what gdb and elfutils do on x86_64
    kUndefined,      // DW_CFA_undefined: no value (RA undefined = outermost)
    kSameValue,      // DW_CFA_same_value
    kOffset,         // value at address CFA + value
    kValOffset,      // value is CFA + value
    kRegister,       // value of register `value`
    kExpression,     // value at address computed by expr (CFA pushed first)
    kValExpression,  // value computed by expr (CFA pushed first)
  };
  Kind kind = Kind::kUnspecified;
  int64_t value = 0;
  absl::Span<const uint8_t> expr;

  friend bool operator==(const RegisterRule& a, const RegisterRule& b) {
    return a.kind == b.kind && a.value == b.value &&
           a.expr.data() == b.expr.data() && a.expr.size() == b.expr.size();
  }
};

struct Row {
  uint64_t pc_lo = 0;  // file address, inclusive
  uint64_t pc_hi = 0;  // file address, exclusive
  CfaRule cfa;
  std::array<RegisterRule, arch::kMaxRegisters> regs{};
  uint16_t return_address_register = 0;  // from the CIE
  bool signal_frame = false;             // CIE augmentation 'S'
  // aarch64 DW_CFA_AARCH64_negate_ra_state: RA is PAC-signed at this PC.
  bool ra_signed = false;
  int64_t args_size = 0;  // DW_CFA_GNU_args_size
};

}  // namespace unwindd::unwinder

#endif  // UNWINDD_UNWINDER_CFI_ROW_H_
