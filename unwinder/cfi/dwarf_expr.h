// DWARF expression evaluator (DWARF 5 §2.5) for CFI: DW_CFA_def_cfa_expression,
// DW_CFA_expression and DW_CFA_val_expression.
//
//   ExpressionContext ctx{&regs, &memory, Arch::kX86_64, load_bias};
//   absl::StatusOr<uint64_t> cfa = EvaluateExpression(expr, ctx, std::nullopt);
//
// Registers and memory are the *target's*. Every DW_OP that makes sense
// without debug info (literals, stack ops, arithmetic/logic, comparisons and
// branches, breg/reg, deref/deref_size/xderef, regval_type-free subset,
// DW_OP_nop, DW_OP_GNU_encoded_addr, DW_OP_call_frame_cfa is an error here
// because CFI expressions may not use it). Limits: stack depth 64 and a
// budget of operations (branches can loop). Malformed expressions are
// DataLoss, unsupported ops Unimplemented, unreadable memory OutOfRange.
#ifndef UNWINDD_UNWINDER_CFI_DWARF_EXPR_H_
#define UNWINDD_UNWINDER_CFI_DWARF_EXPR_H_

#include <cstdint>
#include <optional>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "arch/arch.h"
#include "arch/register_set.h"
#include "memory/memory.h"

namespace unwindd::unwinder {

inline constexpr int kMaxExpressionStack = 64;
inline constexpr int kMaxExpressionOps = 10000;

struct ExpressionContext {
  const arch::RegisterSet* regs = nullptr;  // the callee frame's registers
  memory::Memory* memory = nullptr;         // target memory
  arch::Arch arch = arch::Arch::kX86_64;
  // Added to DW_OP_addr / DW_OP_GNU_encoded_addr operands, which are file
  // addresses.
  uint64_t load_bias = 0;
};

// Evaluates `expr`; `initial`, when set, is pushed first (the CFA for
// DW_CFA_expression / DW_CFA_val_expression). Returns the top of the stack.
absl::StatusOr<uint64_t> EvaluateExpression(absl::Span<const uint8_t> expr,
                                            const ExpressionContext& ctx,
                                            std::optional<uint64_t> initial);

}  // namespace unwindd::unwinder

#endif  // UNWINDD_UNWINDER_CFI_DWARF_EXPR_H_
