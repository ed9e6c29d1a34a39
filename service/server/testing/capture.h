// Profiler samples of a real process, for UnwindSnapshots tests and the load
// benchmark: what perf's PERF_SAMPLE_REGS_USER + PERF_SAMPLE_STACK_USER
// would give for each thread (registers, and a copy of the stack from SP
// up), taken with ptrace while the process is stopped.
//
//   absl::StatusOr<std::vector<v1::SnapshotRequest>> s =
//       CaptureSamples(pid, {.mappings = Mappings::kWithBuildIds});
#ifndef UNWINDD_SERVICE_SERVER_TESTING_CAPTURE_H_
#define UNWINDD_SERVICE_SERVER_TESTING_CAPTURE_H_

#include <sys/types.h>

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/unwinder.pb.h"

namespace unwindd::service::testing {

struct CaptureOptions {
  enum class Mappings {
    kNone,           // only the pid: the server reads /proc/PID/maps
    kPaths,          // the process's mappings with their paths
    kWithBuildIds,   // ... and each ELF file's build-id
  };
  Mappings mappings = Mappings::kWithBuildIds;
  bool with_pid = true;     // set the sample's pid (live memory allowed)
  bool perf_registers = false;  // PerfRegisters instead of DwarfRegisters
  bool identities = false;  // each mapping's inode and device, as perf's MMAP2
  uint64_t max_stack = 256 << 10;
};

// One sample per thread of `pid`, in the order UnwindProcess reports them,
// with sample_id = the thread's index.
absl::StatusOr<std::vector<v1::SnapshotRequest>> CaptureSamples(
    pid_t pid, const CaptureOptions& options);

}  // namespace unwindd::service::testing

#endif  // UNWINDD_SERVICE_SERVER_TESTING_CAPTURE_H_
