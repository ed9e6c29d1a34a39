// `unwind profile`: a whole profiler in one command. It samples a running
// fixture (perf_busy) with perf_event_open for a second, unwinds as it
// goes, and writes a profile that `go tool pprof` reads; the process runs
// on, untraced and unstopped, and SIGINT ends a profile without
// --duration cleanly. Nearly every sample's walk reaches the end of its
// stack (the bottom of a thread: libc's clone3 or __libc_start_call_main).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "proc/perf/testing/recording.h"
#include "testdata/harness/json.h"
#include "testdata/harness/subprocess.h"
#include "testdata/harness/tools.h"

namespace unwindd {
namespace {

using harness::RunTool;
using harness::ToolOutput;

std::string UnwindBinary() { return harness::RunfilesRoot() + "/service/unwind"; }

// /proc/PID/status's field `name` ("TracerPid", "State").
std::string Status(pid_t pid, const std::string& name) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(in, line)) {
    if (absl::StartsWith(line, name + ":")) return line.substr(name.size() + 2);
  }
  return "";
}

void ExpectRunningUntraced(pid_t pid) {
  EXPECT_EQ(kill(pid, 0), 0) << "the profiled process is gone";
  EXPECT_EQ(Status(pid, "TracerPid"), "0");
  const std::string state = Status(pid, "State");
  EXPECT_FALSE(absl::StartsWith(state, "T") || absl::StartsWith(state, "t")) << state;
}

class UnwindProfileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string reason = proc::perf::testing::CannotRecordReason();
    if (!reason.empty()) GTEST_SKIP() << reason;
    absl::StatusOr<harness::RunningProgram> p =
        harness::StartProgram(harness::FixturePath("perf/perf_busy_O2_nofp_pie"),
                              absl::Seconds(10), harness::Settle::kNo);
    ASSERT_TRUE(p.ok()) << p.status();
    program_.emplace(*std::move(p));
  }
  pid_t pid() const { return program_->pid(); }

  std::optional<harness::RunningProgram> program_;
};

TEST_F(UnwindProfileTest, ProfilesARunningProcessForADuration) {
  const std::string dir = ::testing::TempDir();
  const std::string json = dir + "/profile.json";
  absl::StatusOr<ToolOutput> out =
      RunTool({UnwindBinary(), "profile", absl::StrCat("--pid=", pid()), "--duration=1",
               "--frequency=499", "--format=json", "-o", json},
              absl::Seconds(60));
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->exit_code, 0) << out->stderr_text;
  ExpectRunningUntraced(pid());
  std::ifstream in(json);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  absl::StatusOr<harness::JsonValue> doc = harness::ParseJson(text);
  ASSERT_TRUE(doc.ok()) << doc.status();
  const std::vector<harness::JsonValue>& samples = doc->Find("samples")->elements();
  // perf_busy keeps both CPUs busy: ~2 x 499 samples in a second on an idle
  // machine. cpu-clock counts the CPU the process gets, so a machine busy
  // with other tests (the suite runs two at a time) gives fewer; a tenth of
  // a CPU still shows that sampling runs for the duration.
  ASSERT_GT(samples.size(), 50u) << out->stderr_text;
  int complete = 0;
  for (const harness::JsonValue& s : samples) {
    EXPECT_EQ(s.Find("pid")->AsInt64().value_or(0), pid());
    const harness::JsonValue* stop = s.Find("stop");
    complete += stop != nullptr && stop->text() == "end_of_stack";
  }
  // The rest: walks deeper than the 16 KiB copy (perf_busy's deep thread)
  // and samples in a new thread's first instructions.
  EXPECT_GT(complete, static_cast<int>(samples.size() * 8 / 10))
      << complete << " of " << samples.size();
}

TEST_F(UnwindProfileTest, SigintEndsItAndThePprofIsReadable) {
  const std::string dir = ::testing::TempDir();
  const std::string pb = dir + "/profile.pb.gz";
  const std::string err = dir + "/stderr";
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    freopen(err.c_str(), "w", stderr);
    const std::string bin = UnwindBinary();
    const std::string pid_arg = absl::StrCat("--pid=", pid());
    execl(bin.c_str(), bin.c_str(), "profile", pid_arg.c_str(), "-o", pb.c_str(), nullptr);
    _exit(127);
  }
  sleep(1);
  ASSERT_EQ(kill(child, SIGINT), 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  std::ifstream e(err);
  std::string stderr_text((std::istreambuf_iterator<char>(e)), std::istreambuf_iterator<char>());
  EXPECT_EQ(WEXITSTATUS(status), 0) << stderr_text;
  ExpectRunningUntraced(pid());
  absl::StatusOr<ToolOutput> top = RunTool(
      {"env", absl::StrCat("HOME=", dir), absl::StrCat("PPROF_TMPDIR=", dir),
       absl::StrCat("GOCACHE=", dir, "/gocache"), "GOTOOLCHAIN=local", "GOFLAGS=", "GOPROXY=off",
       "go", "tool", "pprof", "-top", "-addresses", "-symbolize=none", pb},
      absl::Seconds(120));
  if (!top.ok() && absl::IsNotFound(top.status())) GTEST_SKIP() << "no `go` (golang-go)";
  ASSERT_TRUE(top.ok()) << top.status();
  ASSERT_EQ(top->exit_code, 0) << top->stderr_text;
  EXPECT_TRUE(absl::StrContains(top->stdout_text, "perf_busy_O2_nofp_pie")) << top->stdout_text;
  EXPECT_TRUE(absl::StrContains(top->stdout_text, "Type: cpu")) << top->stdout_text;
}

}  // namespace
}  // namespace unwindd
