// Real recordings for tests: `perf record -e cpu-clock --call-graph dwarf`
// of a fixture program for about a second, in file or pipe mode, and
// `perf script` over the result. Test-only.
//
//   absl::StatusOr<std::string> path = RecordWithPerf(
//       FixturePath("perf/perf_busy_O2_nofp_pie"), dir, Mode::kFile);
//   absl::StatusOr<std::string> text = PerfScript(*path, {"--no-inline"});
#ifndef UNWINDD_PROC_PERF_TESTING_RECORDING_H_
#define UNWINDD_PROC_PERF_TESTING_RECORDING_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace unwindd::proc::perf::testing {

enum class Mode { kFile, kPipe };

// Why a test cannot record here ("" if it can): not root (cpu-clock needs
// perf_event_paranoid <= 1 otherwise, and reading every mapped file), or
// no perf on PATH. Tests GTEST_SKIP with this.
std::string CannotRecordReason();

// Records `argv` (a program that runs until killed) for `duration`, then
// SIGINTs perf, which ends the program. Returns the perf.data path
// (dir/NAME.data, NAME from `name`). Pipe mode writes `perf record -o -`'s
// stdout to the file. `extra` goes before "--" (e.g. {"-F", "999"}).
// perf runs with HOME=dir, so its build-id cache (where it keeps the
// [vdso] image, see proc/perf/perf_snapshot.h) is BuildIdDir(dir), the
// same for PerfScript, and never the machine's ~/.debug (Bazel's test
// environment may not set HOME at all).
absl::StatusOr<std::string> RecordWithPerf(
    const std::vector<std::string>& argv, const std::string& dir,
    const std::string& name, Mode mode,
    absl::Duration duration = absl::Seconds(1),
    const std::vector<std::string>& extra = {});

// `perf script -i PATH ARGS...`'s stdout, with HOME=dir of `path`;
// Internal if perf fails.
absl::StatusOr<std::string> PerfScript(const std::string& path,
                                       const std::vector<std::string>& args);

// dir/.debug: perf's build-id cache for recordings made in `dir`.
std::string BuildIdDir(const std::string& dir);

}  // namespace unwindd::proc::perf::testing

#endif  // UNWINDD_PROC_PERF_TESTING_RECORDING_H_
