// Small DWARF expressions synthesised for SFrame v3 flexible FDEs, whose
// rules ("CFA = *(rbp - 8)", "FP = *(rbp + 0)") have no RegOffset form in a
// Row. Rows point into this arena, so it lives as long as the section that
// owns it; equal expressions are made once. Thread-safe.
//
//   ExprArena arena;
//   absl::StatusOr<absl::Span<const uint8_t>> e = arena.Breg(6, -8);
//   // e = DW_OP_breg6 -8 (push rbp - 8)
#ifndef UNWINDD_UNWINDER_SFRAME_EXPR_ARENA_H_
#define UNWINDD_UNWINDER_SFRAME_EXPR_ARENA_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <tuple>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"

namespace unwindd::unwinder::sframe {

class ExprArena {
 public:
  // Distinct expressions per section; a section is bounded, and so is this.
  static constexpr size_t kMaxExpressions = 65536;

  // DW_OP_breg<reg> <offset> (DW_OP_bregx for reg > 31), followed by
  // DW_OP_deref when `deref`. ResourceExhausted past kMaxExpressions.
  absl::StatusOr<absl::Span<const uint8_t>> Breg(uint32_t reg, int64_t offset,
                                                 bool deref = false);

 private:
  using Key = std::tuple<uint32_t, int64_t, bool>;
  absl::Mutex mu_;
  absl::flat_hash_map<Key, std::unique_ptr<std::vector<uint8_t>>> exprs_
      ABSL_GUARDED_BY(mu_);
};

// What ExprArena::Breg encodes, read back from an expression (for reports
// and tests); nullopt for any other expression.
struct BregRule {
  uint32_t reg = 0;
  int64_t offset = 0;
  bool deref = false;
};
std::optional<BregRule> ParseBreg(absl::Span<const uint8_t> expr);

}  // namespace unwindd::unwinder::sframe

#endif  // UNWINDD_UNWINDER_SFRAME_EXPR_ARENA_H_
