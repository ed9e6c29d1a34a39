// Child processes for the end-to-end tests: the fixture programs (started,
// waited for until every thread is parked, always killed) and the tools run
// against them (eu-stack, gdb, our `unwind` CLI), each under a deadline.
//
//   absl::StatusOr<RunningProgram> p =
//       StartProgram(FixturePath("threads_c_O2_nofp_pie"));
//   absl::StatusOr<ToolOutput> out =
//       RunTool({"eu-stack", "-p", absl::StrCat(p->pid())}, absl::Seconds(60));
//
// Every child gets PR_SET_PDEATHSIG(SIGKILL), so a test process that dies on
// a crash or a Bazel timeout does not leave fixtures or attached debuggers
// behind.
#ifndef UNWINDD_TESTDATA_HARNESS_SUBPROCESS_H_
#define UNWINDD_TESTDATA_HARNESS_SUBPROCESS_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace unwindd::harness {

// A started fixture program. Destroying it kills (SIGKILL) and reaps it.
class RunningProgram {
 public:
  RunningProgram(pid_t pid, int stdout_fd) : pid_(pid), stdout_fd_(stdout_fd) {}
  RunningProgram(RunningProgram&& other) noexcept;
  RunningProgram& operator=(RunningProgram&& other) noexcept;
  RunningProgram(const RunningProgram&) = delete;
  RunningProgram& operator=(const RunningProgram&) = delete;
  ~RunningProgram() { Kill(); }

  pid_t pid() const { return pid_; }

  // Kills and reaps the program now; idempotent.
  void Kill();

 private:
  pid_t pid_ = -1;
  int stdout_fd_ = -1;  // Kept open so the program never gets SIGPIPE.
};

// Starts `path` with stdin from /dev/null and stdout to a pipe, waits up to
// `ready_timeout` for its "ready" line, then until every thread is parked
// (WaitUntilSettled).
absl::StatusOr<RunningProgram> StartProgram(
    const std::string& path, absl::Duration ready_timeout = absl::Seconds(10));
// The same for a program that keeps running (a CPU-bound fixture): with
// Settle::kNo, only its "ready" line is waited for.
enum class Settle { kWait, kNo };
absl::StatusOr<RunningProgram> StartProgram(const std::string& path,
                                            absl::Duration ready_timeout, Settle settle);

// Waits until every thread of `pid` is blocked in a system call and stays
// there: /proc/PID/task/TID/syscall (syscall number, arguments, sp, pc) is a
// syscall for every thread and identical, for the same set of threads, in two
// reads 20 ms apart. A "ready" line only says every thread is *about* to
// block; this makes sure they got there, without guessing a sleep.
absl::Status WaitUntilSettled(pid_t pid, absl::Duration timeout);

struct ToolOutput {
  // The exit status, or 128 + signal number if a signal killed the tool.
  int exit_code = 0;
  std::string stdout_text;
  std::string stderr_text;
};

// Runs argv[0] (searched in PATH) with stdin from /dev/null, collecting
// stdout and stderr. Past `timeout` the tool is killed and DeadlineExceeded
// returned. A non-zero exit is not an error here: callers decide. The
// environment is inherited minus DEBUGINFOD_URLS, so neither eu-stack nor gdb
// ever goes to the network for debug info.
absl::StatusOr<ToolOutput> RunTool(const std::vector<std::string>& argv,
                                   absl::Duration timeout);

}  // namespace unwindd::harness

#endif  // UNWINDD_TESTDATA_HARNESS_SUBPROCESS_H_
