// Registers of a profiler's sample, converted to a RegisterSet (DWARF
// numbering): either already in DWARF numbering, or as perf's
// PERF_SAMPLE_REGS_USER gives them — a sample_regs_user bit mask in the
// kernel's perf_event_{x86,arm64}_regs numbering and the values of the set
// bits, lowest bit first.
//
//   absl::StatusOr<arch::RegisterSet> r =
//       RegistersFromPerf(arch::Arch::kX86_64, mask, values);
#ifndef UNWINDD_PROC_SNAPSHOT_TARGET_REGS_H_
#define UNWINDD_PROC_SNAPSHOT_TARGET_REGS_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "arch/arch.h"
#include "arch/arch_ops.h"
#include "arch/register_set.h"

namespace unwindd::proc {

// InvalidArgument if `values` does not have one value per set bit of `mask`.
// Registers the unwinder does not track (flags, segment registers) are
// dropped.
absl::StatusOr<arch::RegisterSet> RegistersFromPerf(
    arch::Arch arch, uint64_t mask, absl::Span<const uint64_t> values);

// The same into `regs`, which is reset to `arch` first (on error it holds no
// valid register): for a caller that converts a sample's registers in
// place. `values` has size() and operator[] (a span, perf::U64Array).
template <typename Values>
absl::Status RegistersFromPerfInto(arch::Arch arch, uint64_t mask, const Values& values,
                                   arch::RegisterSet& regs);

namespace internal {
absl::Status PerfRegisterCountError(uint64_t mask, size_t bits, size_t values);
}  // namespace internal

template <typename Values>
absl::Status RegistersFromPerfInto(arch::Arch arch, uint64_t mask, const Values& values,
                                   arch::RegisterSet& regs) {
  regs.Reset(arch);
  // One value per set bit of `mask`, lowest bit first (perf_regs.h).
  const size_t bits = static_cast<size_t>(__builtin_popcountll(mask));
  if (bits != values.size()) return internal::PerfRegisterCountError(mask, bits, values.size());
  // perf index -> DWARF number, -1 for registers the unwinder does not track.
  const absl::Span<const int> table = arch::GetArchOps(arch).perf_regs;
  const uint64_t width = regs.mask();  // once, not per register
  size_t next = 0;
  for (uint64_t rest = mask; rest != 0; rest &= rest - 1) {
    const int bit = __builtin_ctzll(rest);
    const uint64_t v = values[next++];
    if (static_cast<size_t>(bit) < table.size() && table[bit] >= 0 &&
        table[bit] < arch::kMaxRegisters) {
      regs.SetUnchecked(table[bit], v & width);
    }
  }
  return absl::OkStatus();
}

// (DWARF number, value) pairs; InvalidArgument for a number the arch does
// not have (or that the unwinder does not track).
absl::StatusOr<arch::RegisterSet> RegistersFromDwarf(
    arch::Arch arch, absl::Span<const std::pair<uint32_t, uint64_t>> values);

}  // namespace unwindd::proc

#endif  // UNWINDD_PROC_SNAPSHOT_TARGET_REGS_H_
