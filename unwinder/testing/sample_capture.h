// Captures profiler-style samples of a live process for benchmarks and
// tests: per thread the registers, a copy of the stack from SP upwards (as
// perf's PERF_SAMPLE_STACK_USER would), and the mappings with their files
// opened, so the samples can be unwound long after the process is gone.
//
//   absl::StatusOr<std::vector<proc::Snapshot>> s = CaptureSamples(pid, 64 << 10);
//   auto target = proc::CreateSnapshotTarget(s->front(), nullptr);
#ifndef UNWINDD_UNWINDER_TESTING_SAMPLE_CAPTURE_H_
#define UNWINDD_UNWINDER_TESTING_SAMPLE_CAPTURE_H_

#include <sys/types.h>

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "proc/snapshot_target.h"

namespace unwindd::unwinder::testing {

// One Snapshot per thread of `pid` (attached and detached here). The stack
// copy is at most `stack_bytes`, cut at the end of the stack's mapping.
absl::StatusOr<std::vector<proc::Snapshot>> CaptureSamples(pid_t pid,
                                                           size_t stack_bytes);

}  // namespace unwindd::unwinder::testing

#endif  // UNWINDD_UNWINDER_TESTING_SAMPLE_CAPTURE_H_
