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

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "arch/arch.h"
#include "arch/register_set.h"

namespace unwindd::proc {

// InvalidArgument if `values` does not have one value per set bit of `mask`.
// Registers the unwinder does not track (flags, segment registers) are
// dropped.
absl::StatusOr<arch::RegisterSet> RegistersFromPerf(
    arch::Arch arch, uint64_t mask, absl::Span<const uint64_t> values);

// (DWARF number, value) pairs; InvalidArgument for a number the arch does
// not have (or that the unwinder does not track).
absl::StatusOr<arch::RegisterSet> RegistersFromDwarf(
    arch::Arch arch, absl::Span<const std::pair<uint32_t, uint64_t>> values);

}  // namespace unwindd::proc

#endif  // UNWINDD_PROC_SNAPSHOT_TARGET_REGS_H_
