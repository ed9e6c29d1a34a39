// Making cores of running fixture programs (gdb's gcore, and the kernel's
// own dump after a fatal signal) and running the three unwinders on a core:
// eu-stack --core, gdb's `core-file`, and our `unwind core`.
//
//   absl::StatusOr<std::string> g = Gcore(pid, dir + "/gcore");
//   absl::StatusOr<std::string> k = CrashAndFindKernelCore(program, SIGSEGV,
//   cwd); absl::StatusOr<ThreadFrames> eu = EuStackCoreFrames(*k, exe, &names);
//
// gdb runs with the same settings as on live processes (tools.h), so its
// frames compare the same way.
#ifndef UNWINDD_TESTDATA_CORE_CORE_TOOLS_H_
#define UNWINDD_TESTDATA_CORE_CORE_TOOLS_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "testdata/harness/frames.h"
#include "testdata/harness/subprocess.h"

namespace unwindd::harness {

// gdb's gcore command on PID, as `gcore -o PREFIX PID` runs it; returns
// PREFIX.PID.
absl::StatusOr<std::string> Gcore(pid_t pid, const std::string& prefix);

// Lets the kernel dump `program`: RLIMIT_CORE must already be unlimited in
// the program (set it in the test before starting it) and the program's
// working directory must be `cwd`. Sends `sig`, waits for the dump to
// finish (the process then exits; it is left unreaped for RunningProgram),
// and finds the file per /proc/sys/kernel/core_pattern and core_uses_pid.
// FailedPrecondition (callers skip) when the pattern pipes cores to a
// program or names a place this cannot find.
absl::StatusOr<std::string> CrashAndFindKernelCore(
    const RunningProgram& program, int sig, const std::string& cwd);

// `eu-stack -n 0 --core=CORE --executable=EXE`.
absl::StatusOr<ThreadFrames> EuStackCoreFrames(const std::string& core,
                                               const std::string& exe,
                                               SymbolNames* names = nullptr);

// One gdb session: `settings` (e.g. "set sysroot DIR"), `file EXE`, then
// for each core `core-file CORE` and the frames script. One result per
// core, in order.
absl::StatusOr<std::vector<ThreadFrames>> GdbCoreFrames(
    const std::string& exe, const std::vector<std::string>& cores,
    const std::vector<std::string>& settings = {});

struct UnwindCoreResult {
  UnwindOutput frames;
  std::string json;    // stdout
  std::string errors;  // stderr (warnings)
};

// `UNWIND core CORE ARGS... --format=json --max-frames=4096`.
absl::StatusOr<UnwindCoreResult> UnwindCoreFrames(
    const std::string& unwind, const std::string& core,
    const std::vector<std::string>& args);

}  // namespace unwindd::harness

#endif  // UNWINDD_TESTDATA_CORE_CORE_TOOLS_H_
