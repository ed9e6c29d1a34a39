// Applies a Row to a frame's registers: computes the CFA, then every register
// rule, giving the caller's registers (DWARF 5 §6.4.1 register rules).
//
//   absl::StatusOr<ApplyResult> r = ApplyRow(row, regs, memory, load_bias);
//   if (r->ra_undefined) -> outermost frame (end_of_stack)
//
// Registers and memory are in the target's address space. The caller's PC is
// the value recovered for the row's return-address register; its SP is the
// CFA unless a rule says otherwise. Registers with kUnspecified rules keep
// the callee's value.
#ifndef UNWINDD_UNWINDER_CFI_APPLY_H_
#define UNWINDD_UNWINDER_CFI_APPLY_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "arch/register_set.h"
#include "memory/memory.h"
#include "unwinder/cfi/row.h"

namespace unwindd::unwinder {

struct ApplyResult {
  arch::RegisterSet caller;
  uint64_t cfa = 0;
  // The return-address rule is kUndefined: this frame is the outermost.
  bool ra_undefined = false;
};

// Errors: FailedPrecondition if the row has no CFA rule; OutOfRange if the
// CFA or the return address needs memory that is unreadable (the message
// names the address) or a register whose value is unknown; DataLoss /
// Unimplemented from expressions. A callee-saved register whose value
// cannot be read is left unknown in the result (cfi/rules.h).
//
// `restored_below`: for the frame where the thread actually was (frame 0,
// or one a signal interrupted), its SP; a callee-saved register whose slot
// (CFA + offset) lies below it was popped by the epilogue already and keeps
// its value (rules::ReadCalleeSaved). 0 for every other frame.
absl::StatusOr<ApplyResult> ApplyRow(const Row& row,
                                     const arch::RegisterSet& regs,
                                     memory::Memory& memory,
                                     uint64_t load_bias,
                                     uint64_t restored_below = 0);

}  // namespace unwindd::unwinder

#endif  // UNWINDD_UNWINDER_CFI_APPLY_H_
