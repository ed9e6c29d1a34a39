#include "proc/perf/testing/recording.h"

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "testdata/harness/subprocess.h"

namespace unwindd::proc::perf::testing {
namespace {

// A shell word for sh -c.
std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

}  // namespace

std::string CannotRecordReason() {
  if (geteuid() != 0) {
    return "needs root: perf record of cpu-clock with --call-graph dwarf "
           "(perf_event_paranoid) and reading every mapped file";
  }
  absl::StatusOr<harness::ToolOutput> v =
      harness::RunTool({"perf", "--version"}, absl::Seconds(30));
  if (!v.ok() || v->exit_code != 0) {
    return "perf is not installed (Debian package linux-perf, see "
           "scripts/requirements.txt)";
  }
  return "";
}

absl::StatusOr<std::string> RecordWithPerf(const std::vector<std::string>& argv,
                                           const std::string& dir,
                                           const std::string& name, Mode mode,
                                           absl::Duration duration,
                                           const std::vector<std::string>& extra) {
  const std::string out = absl::StrCat(dir, "/", name, ".data");
  std::vector<std::string> cmd = {
      "env", absl::StrCat("HOME=", dir),
      "timeout", "-s", "INT", absl::StrCat(absl::ToDoubleSeconds(duration)),
      "perf",    "record", "-e", "cpu-clock", "--call-graph", "dwarf", "-o",
      mode == Mode::kFile ? out : "-"};
  cmd.insert(cmd.end(), extra.begin(), extra.end());
  cmd.push_back("--");
  cmd.insert(cmd.end(), argv.begin(), argv.end());
  std::string shell;
  for (const std::string& w : cmd) absl::StrAppend(&shell, Quote(w), " ");
  // In pipe mode perf's stdout is the data; perf points the workload's
  // stdout at stderr itself (evlist__prepare_workload: dup2(2, 1)), so the
  // program's "ready" does not mix into it.
  if (mode == Mode::kPipe) {
    shell = absl::StrCat("exec ", shell, "> ", Quote(out));
  } else {
    shell = absl::StrCat("exec ", shell, "> /dev/null");
  }
  absl::StatusOr<harness::ToolOutput> r =
      harness::RunTool({"sh", "-c", shell}, duration + absl::Seconds(60));
  if (!r.ok()) return r.status();
  // timeout exits 124 when it had to signal perf; perf then exits 0 or
  // with the workload's signal. What matters is the file.
  if (access(out.c_str(), R_OK) != 0) {
    return absl::InternalError(absl::StrCat("perf record wrote no ", out, ": ",
                                            r->stderr_text));
  }
  return out;
}

absl::StatusOr<std::string> PerfScript(const std::string& path,
                                       const std::vector<std::string>& args) {
  const std::string dir = path.substr(0, path.rfind('/') + 1);
  std::vector<std::string> cmd = {"env", absl::StrCat("HOME=", dir), "perf",
                                  "script", "-i", path};
  cmd.insert(cmd.end(), args.begin(), args.end());
  absl::StatusOr<harness::ToolOutput> r = harness::RunTool(cmd, absl::Seconds(300));
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) {
    return absl::InternalError(absl::StrCat(absl::StrJoin(cmd, " "), " exited ",
                                            r->exit_code, ": ", r->stderr_text));
  }
  return r->stdout_text;
}

std::string BuildIdDir(const std::string& dir) { return absl::StrCat(dir, "/.debug"); }

}  // namespace unwindd::proc::perf::testing
