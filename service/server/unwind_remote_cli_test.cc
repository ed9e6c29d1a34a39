// `unwind --server=...` as a new user runs it (issue 27), against the real
// unwindd: health and stats, a demo piped into head that leaves nothing
// behind, the same output and errors as the local CLI (a core's warnings
// name the core, not the server's /proc/self/fd/N), a wrong --exe said
// rather than ignored, and unsupported commands named. Also
// `unwindd --version`.
#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "service/server/testing/server_fixture.h"
#include "testdata/harness/subprocess.h"
#include "testdata/harness/tools.h"

namespace unwindd::service {
namespace {

using harness::ToolOutput;
using testing::ServerProcess;
using testing::TempDir;

ToolOutput RunArgs(const std::vector<std::string>& argv) {
  absl::StatusOr<ToolOutput> out = harness::RunTool(argv, absl::Seconds(60));
  EXPECT_TRUE(out.ok()) << out.status();
  return out.value_or(ToolOutput{});
}

std::string Unwind() { return testing::ServiceBinary("unwind"); }

std::string FixtureDir() { return harness::RunfilesRoot() + "/testdata/core/fixture"; }

// Processes whose session is `sid` (field 6 of /proc/PID/stat).
std::vector<pid_t> InSession(pid_t sid) {
  std::vector<pid_t> out;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    pid_t pid = 0;
    if (!absl::SimpleAtoi(e.path().filename().string(), &pid)) continue;
    std::ifstream f(e.path() / "stat");
    std::string line;
    std::getline(f, line);
    const size_t paren = line.rfind(')');
    if (paren == std::string::npos) continue;
    std::vector<std::string> fields =
        absl::StrSplit(line.substr(paren + 2), ' ', absl::SkipEmpty());
    // After "(comm)": state ppid pgrp session ...
    int session = 0;
    if (fields.size() > 3 && absl::SimpleAtoi(fields[3], &session) && session == sid) {
      out.push_back(pid);
    }
  }
  return out;
}

class UnwindRemoteCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (ptraces the demo)";
    absl::StatusOr<std::unique_ptr<ServerProcess>> s = ServerProcess::Start(dir_.path(), {});
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = *std::move(s);
  }

  ToolOutput Local(std::vector<std::string> args) {
    args.insert(args.begin(), Unwind());
    return RunArgs(args);
  }
  ToolOutput Remote(std::vector<std::string> args) {
    args.insert(args.begin(), {Unwind(), "--server=" + server_->address()});
    return RunArgs(args);
  }

  TempDir dir_;
  std::unique_ptr<ServerProcess> server_;
};

TEST_F(UnwindRemoteCliTest, HealthAndStats) {
  const ToolOutput health = Remote({"health"});
  EXPECT_EQ(health.exit_code, 0) << health.stderr_text;
  EXPECT_EQ(health.stdout_text, "SERVING\n");
  // --server ADDRESS (a space) is the same.
  const ToolOutput spaced = RunArgs({Unwind(), "--server", server_->address(), "health"});
  EXPECT_EQ(spaced.stdout_text, "SERVING\n") << spaced.stderr_text;

  ASSERT_EQ(Remote({"demo"}).exit_code, 0);
  const ToolOutput stats = Remote({"stats"});
  EXPECT_EQ(stats.exit_code, 0) << stats.stderr_text;
  EXPECT_TRUE(absl::StrContains(stats.stdout_text, "\nprocess_requests 1\n") ||
              absl::StartsWith(stats.stdout_text, "process_requests 1\n"))
      << stats.stdout_text;
  EXPECT_TRUE(absl::StrContains(stats.stdout_text, "stops.end_of_stack 5\n"))
      << stats.stdout_text;
  EXPECT_TRUE(absl::StrContains(stats.stdout_text, "uptime_seconds ")) << stats.stdout_text;
  const ToolOutput json = Remote({"stats", "--format=json"});
  EXPECT_EQ(json.exit_code, 0);
  EXPECT_TRUE(absl::StartsWith(json.stdout_text, "{\"process_requests\": 1, "))
      << json.stdout_text;
  EXPECT_TRUE(absl::StrContains(json.stdout_text, "\"stops\": {\"end_of_stack\": 5}"))
      << json.stdout_text;
  EXPECT_TRUE(absl::EndsWith(json.stdout_text, "}\n")) << json.stdout_text;

  // A server that is gone: one line, exit 1.
  const std::string address = server_->address();
  EXPECT_EQ(server_->Terminate(), 0);
  const ToolOutput gone = RunArgs({Unwind(), "--server=" + address, "health"});
  EXPECT_EQ(gone.exit_code, 1);
  EXPECT_TRUE(absl::StartsWith(gone.stderr_text, "unwind: cannot reach unwindd at "))
      << gone.stderr_text;
}

// `unwind --server=... demo | head -3`: when head exits first, SIGPIPE
// ends unwind, and the demo process must not outlive it. Run in a session
// of its own, so that whatever is left of it can be found. Whether
// `head -3` is gone before unwind writes its second block is a race;
// `head -n 0` exits at once, so unwind always meets SIGPIPE.
TEST_F(UnwindRemoteCliTest, DemoIntoHeadLeavesNoProcess) {
  for (const char* head : {"head -n 0", "head -n 0", "head -3", "head -3"}) {
    const ToolOutput out = RunArgs(
        {"setsid", "-w", "sh", "-c",
         // unwind's stderr (which a leaked demo would hold open) is not
         // the test's: RunTool would wait for it to close.
         absl::StrCat("echo $$; '", Unwind(), "' --server=", server_->address(),
                      " demo 2>/dev/null | ", head, " >/dev/null")});
    ASSERT_EQ(out.exit_code, 0) << out.stderr_text;
    pid_t sid = 0;
    ASSERT_TRUE(absl::SimpleAtoi(out.stdout_text.substr(0, out.stdout_text.find('\n')), &sid))
        << out.stdout_text;
    std::vector<pid_t> left = InSession(sid);
    for (int tries = 0; !left.empty() && tries < 100; ++tries) {
      absl::SleepFor(absl::Milliseconds(20));
      left = InSession(sid);
    }
    EXPECT_TRUE(left.empty()) << "left running: " << left.size() << " processes, e.g. "
                              << (left.empty() ? 0 : left[0]);
    for (pid_t p : left) kill(p, SIGKILL);
  }
}

// The same stdout, stderr and exit code with and without --server.
void ExpectSame(const ToolOutput& local, const ToolOutput& remote, const std::string& what) {
  EXPECT_EQ(remote.exit_code, local.exit_code) << what;
  EXPECT_EQ(remote.stdout_text, local.stdout_text) << what;
  EXPECT_EQ(remote.stderr_text, local.stderr_text) << what;
}

TEST_F(UnwindRemoteCliTest, SameOutputAndErrorsAsLocal) {
  // A truncated core: its warning names the file as given.
  const std::string truncated = dir_.path() + "/truncated.core";
  {
    std::ifstream in(FixtureDir() + "/core", std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_GT(bytes.size(), 300000u);
    std::ofstream(truncated, std::ios::binary) << bytes.substr(0, 300000);
  }
  const std::vector<std::string> args = {"core", truncated, "--sysroot=" + FixtureDir() + "/sysroot",
                                         "--exe=" + FixtureDir() + "/crasher"};
  const ToolOutput local = Local(args);
  EXPECT_TRUE(absl::StrContains(local.stderr_text, truncated + " is truncated"))
      << local.stderr_text;
  const ToolOutput remote = Remote(args);
  EXPECT_FALSE(absl::StrContains(remote.stderr_text, "/proc/self/fd/")) << remote.stderr_text;
  ExpectSame(local, remote, "truncated core");

  for (const std::vector<std::string>& bad : std::vector<std::vector<std::string>>{
           {"core", dir_.path() + "/no-such-core"},
           {"core", "/etc/hostname"},
           {"pid", "999999999"},
           {"pid", "2"},
           {"pid", "1", "--bogus"},
       }) {
    ExpectSame(Local(bad), Remote(bad), bad[1]);
  }
}

// --exe naming another build: said on stderr, and the text says which
// file stood for the executable.
TEST_F(UnwindRemoteCliTest, AWrongExeIsSaidNotIgnored) {
  const std::string fixture = FixtureDir();
  const std::vector<std::string> args = {
      "core", fixture + "/core", "--path-map=/tmp/unwindd-core-fixture=" + fixture,
      "--path-map=/usr/lib/x86_64-linux-gnu=" + fixture + "/sysroot/usr/lib/x86_64-linux-gnu",
      "--exe=" + Unwind()};
  const ToolOutput local = Local(args);
  EXPECT_EQ(local.exit_code, 0) << local.stderr_text;
  EXPECT_TRUE(absl::StrContains(
      local.stdout_text,
      absl::StrCat("\nexecutable file: ", fixture,
                   "/crasher build-id b349eb8d708cd21802399a9ea73e6d6d4ff80428\n")))
      << local.stdout_text;
  EXPECT_TRUE(absl::StrContains(
      local.stderr_text,
      absl::StrCat("unwind: warning: /tmp/unwindd-core-fixture/crasher: ", Unwind(),
                   " has build-id ")))
      << local.stderr_text;
  EXPECT_TRUE(absl::StrContains(
      local.stderr_text, absl::StrCat("; not used, ", fixture, "/crasher used instead\n")))
      << local.stderr_text;
  ExpectSame(local, Remote(args), "wrong --exe");
  // The right one: no warning.
  std::vector<std::string> right = args;
  right.back() = "--exe=" + fixture + "/crasher";
  const ToolOutput good = Local(right);
  EXPECT_EQ(good.stderr_text, "");
  EXPECT_TRUE(absl::StrContains(good.stdout_text, "executable file: " + fixture + "/crasher "))
      << good.stdout_text;
}

TEST_F(UnwindRemoteCliTest, UnsupportedCommandsAreNamed) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"perf", "p.data"},
           {"profile", "--pid=1"},
           {"check-sframe", "f"},
           {"coredump"},
       }) {
    const ToolOutput out = Remote(args);
    EXPECT_EQ(out.exit_code, 1) << args[0];
    EXPECT_EQ(out.stderr_text,
              absl::StrCat("unwind: unwind ", args[0],
                           " is not supported with --server (run it without)\n"));
  }
  const ToolOutput md = Remote({"core", "c", "--minidump=out.dmp"});
  EXPECT_EQ(md.stderr_text, "unwind: --minidump is not supported with --server (run it without)\n");
  // Usage errors are the local CLI's, one line.
  const ToolOutput usage = Remote({"pid", "1", "--format", "xml"});
  EXPECT_EQ(usage.exit_code, 2);
  EXPECT_TRUE(absl::EndsWith(usage.stderr_text, " (see 'unwind pid --help')\n"))
      << usage.stderr_text;
  const ToolOutput help = Remote({"core", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_TRUE(absl::StartsWith(help.stdout_text, "usage: unwind core CORE")) << help.stdout_text;
}

TEST(UnwinddVersionTest, VersionAndCommit) {
  const ToolOutput v = RunArgs({testing::UnwinddBinary(), "--version"});
  EXPECT_EQ(v.exit_code, 0);
  EXPECT_TRUE(std::regex_match(
      v.stdout_text,
      std::regex("unwindd [0-9]+\\.[0-9]+\\.[0-9]+ \\(commit ([0-9a-f]{40}(-dirty)?|unknown)\\)\n")))
      << v.stdout_text;
  const ToolOutput help = RunArgs({testing::UnwinddBinary(), "--help"});
  EXPECT_TRUE(absl::StrContains(help.stdout_text, "--version")) << help.stdout_text;
  const ToolOutput bad = RunArgs({testing::UnwinddBinary(), "--bogus"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.stderr_text, "unwindd: unknown argument '--bogus' (see 'unwindd --help')\n");
}

}  // namespace
}  // namespace unwindd::service
