// What a new user meets first (issue 27), run as they run it: each
// command's help and the version, usage errors that say one thing, flag
// values after a space, `unwind perf -` on a pipe, a recording without
// DWARF stacks, binary output refused on a terminal, and a copied `unwind`
// that says where unwind_remote must go. The --server half is
// service/server/unwind_remote_cli_test.cc.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "proc/perf/testing/recording.h"
#include "testdata/harness/frames.h"
#include "testdata/harness/subprocess.h"
#include "testdata/harness/tools.h"

namespace unwindd::service {
namespace {

using harness::RunTool;
using harness::ToolOutput;

std::string UnwindBinary() { return harness::RunfilesRoot() + "/service/unwind"; }

ToolOutput RunArgs(const std::vector<std::string>& argv) {
  absl::StatusOr<ToolOutput> out = RunTool(argv, absl::Seconds(60));
  EXPECT_TRUE(out.ok()) << out.status();
  return out.value_or(ToolOutput{});
}

ToolOutput RunUnwind(std::vector<std::string> args) {
  args.insert(args.begin(), UnwindBinary());
  return RunArgs(args);
}

// `sh -c SCRIPT`, with $UNWIND the binary under test.
ToolOutput Shell(const std::string& script) {
  return RunArgs({"sh", "-c", absl::StrCat("UNWIND='", UnwindBinary(), "'; ", script)});
}

int Lines(const std::string& text) { return std::count(text.begin(), text.end(), '\n'); }

constexpr const char* kCommands[] = {"pid",     "demo",         "core",   "minidump",
                                     "coredump", "perf",        "profile", "check-sframe",
                                     "health",  "stats"};

TEST(UnwindNewcomerTest, EachCommandHasItsOwnHelp) {
  for (const char* c : kCommands) {
    const ToolOutput help = RunUnwind({"help", c});
    EXPECT_EQ(help.exit_code, 0) << c << help.stderr_text;
    EXPECT_TRUE(absl::StartsWith(help.stdout_text, absl::StrCat("usage: unwind ")))
        << help.stdout_text;
    EXPECT_TRUE(absl::StrContains(help.stdout_text.substr(0, help.stdout_text.find('\n')),
                                  absl::StrCat(" ", c)))
        << help.stdout_text;
    EXPECT_EQ(help.stderr_text, "");
    const ToolOutput flag = RunUnwind({c, "--help"});
    EXPECT_EQ(flag.exit_code, 0) << c;
    EXPECT_EQ(flag.stdout_text, help.stdout_text) << c;
    // One command's usage, not all of them.
    EXPECT_LT(Lines(help.stdout_text), 40) << help.stdout_text;
    EXPECT_FALSE(absl::StrContains(help.stdout_text, "unwind check-sframe FILE") &&
                 std::string(c) != "check-sframe")
        << help.stdout_text;
  }
  const ToolOutput perf = RunUnwind({"perf", "--help"});
  for (const char* flag : {"--format=", "-o FILE", "--pid=PID", "--comm=NAME", "--jobs=N",
                           "--force", "--sysroot=DIR", "unwind perf -"}) {
    EXPECT_TRUE(absl::StrContains(perf.stdout_text, flag)) << flag;
  }
}

TEST(UnwindNewcomerTest, TopHelpNamesServerTlsAndVersion) {
  const ToolOutput help = RunUnwind({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  for (const char* flag : {"--server=ADDRESS", "--tls-ca=PEM", "--tls-cert=PEM",
                           "--tls-key=PEM", "--version", "unwind help COMMAND",
                           "unwind health", "unwind stats"}) {
    EXPECT_TRUE(absl::StrContains(help.stdout_text, flag)) << flag;
  }
  EXPECT_EQ(RunUnwind({"help"}).stdout_text, help.stdout_text);
}

TEST(UnwindNewcomerTest, VersionAndCommit) {
  const ToolOutput v = RunUnwind({"--version"});
  EXPECT_EQ(v.exit_code, 0);
  EXPECT_TRUE(std::regex_match(
      v.stdout_text,
      std::regex("unwind [0-9]+\\.[0-9]+\\.[0-9]+ \\(commit ([0-9a-f]{40}(-dirty)?|unknown)\\)\n")))
      << v.stdout_text;
}

// One line: the error and where the command's usage is; never every
// command's usage.
TEST(UnwindNewcomerTest, UsageErrorsAreOneLine) {
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  for (const Case& c : std::vector<Case>{
           {{"pid", "1", "--bogus"}, "unknown option '--bogus' (see 'unwind pid --help')"},
           {{"perf", "p.data", "--format", "text"}, "(see 'unwind perf --help')"},
           {{"core"}, "core takes exactly one CORE file (see 'unwind core --help')"},
           {{"pid", "1", "--format"}, "--format needs a value (--format=VALUE) (see 'unwind pid --help')"},
           {{"frobnicate"}, "unknown command 'frobnicate' (see 'unwind --help')"},
           {{"help", "frobnicate"}, "unknown command 'frobnicate' (see 'unwind --help')"},
           {{}, "missing command"},
           {{"health"}, "needs --server=ADDRESS (see 'unwind health --help')"},
       }) {
    const ToolOutput out = RunUnwind(c.args);
    EXPECT_EQ(out.exit_code, 2) << c.says;
    EXPECT_EQ(out.stdout_text, "");
    EXPECT_EQ(Lines(out.stderr_text), 1) << out.stderr_text;
    EXPECT_TRUE(absl::StartsWith(out.stderr_text, "unwind: ")) << out.stderr_text;
    EXPECT_TRUE(absl::StrContains(out.stderr_text, c.says)) << out.stderr_text;
  }
}

TEST(UnwindNewcomerTest, FlagValuesAfterASpace) {
  const ToolOutput out = RunUnwind({"demo", "--format", "json", "--max-frames", "64"});
  ASSERT_EQ(out.exit_code, 0) << out.stderr_text;
  absl::StatusOr<harness::UnwindOutput> parsed = harness::ParseUnwindJson(out.stdout_text);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->threads.size(), 5u);
}

// As gzip does: compressed bytes never go to a terminal unless forced.
// The terminal is script(1)'s pseudo-terminal; the refusal comes before
// the input is even opened, and --force goes past it.
TEST(UnwindNewcomerTest, BinaryOutputIsNotWrittenToATerminal) {
  if (access("/usr/bin/script", X_OK) != 0) GTEST_SKIP() << "no script(1)";
  auto on_tty = [](const std::string& cmd) {
    return Shell(absl::StrCat("script -qec \"$UNWIND ", cmd, "\" /dev/null"));
  };
  const std::string missing = absl::StrCat(testing::TempDir(), "/no-such.data");
  const ToolOutput refused = on_tty(absl::StrCat("perf ", missing, " --format=pprof"));
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_TRUE(absl::StrContains(refused.stdout_text,
                                "not writing pprof's gzipped output to a terminal"))
      << refused.stdout_text;
  const ToolOutput profile = on_tty(absl::StrCat("profile --pid=", getpid(), " --duration=1"));
  EXPECT_EQ(profile.exit_code, 1);
  EXPECT_TRUE(absl::StrContains(profile.stdout_text, "add --force")) << profile.stdout_text;
  // Forced: on to the next problem (the missing file).
  const ToolOutput forced = on_tty(absl::StrCat("perf ", missing, " --format=pprof --force"));
  EXPECT_EQ(forced.exit_code, 1);
  EXPECT_FALSE(absl::StrContains(forced.stdout_text, "terminal")) << forced.stdout_text;
  EXPECT_TRUE(absl::StrContains(forced.stdout_text, "no-such.data")) << forced.stdout_text;
  // Text formats, and pprof into a pipe, are fine.
  const ToolOutput text = on_tty(absl::StrCat("perf ", missing, " --format=folded"));
  EXPECT_FALSE(absl::StrContains(text.stdout_text, "terminal")) << text.stdout_text;
  const ToolOutput piped = Shell(absl::StrCat("$UNWIND perf ", missing, " --format=pprof | cat"));
  EXPECT_FALSE(absl::StrContains(piped.stderr_text, "terminal")) << piped.stderr_text;
}

// `unwind` copied alone: the message says where unwind_remote must go.
TEST(UnwindNewcomerTest, ACopiedUnwindSaysWhereUnwindRemoteGoes) {
  std::filesystem::create_directories(absl::StrCat(testing::TempDir(), "/copied"));
  // As /proc/self/exe names it.
  const std::string dir =
      std::filesystem::canonical(absl::StrCat(testing::TempDir(), "/copied")).string();
  const std::string copy = dir + "/unwind";
  std::filesystem::copy_file(UnwindBinary(), copy,
                             std::filesystem::copy_options::overwrite_existing);
  chmod(copy.c_str(), 0755);
  // Without the runfiles a test run has, as a user would run the copy.
  const ToolOutput out = RunArgs(
      {"env", "-u", "RUNFILES_DIR", copy, "--server=unix:/nonexistent.sock", "health"});
  EXPECT_EQ(out.exit_code, 1);
  EXPECT_EQ(Lines(out.stderr_text), 1) << out.stderr_text;
  EXPECT_TRUE(absl::StrContains(out.stderr_text, "--server needs unwind_remote in the same "
                                                 "directory as this unwind, at " +
                                                     dir + "/unwind_remote"))
      << out.stderr_text;
  EXPECT_TRUE(absl::StrContains(out.stderr_text, "side by side")) << out.stderr_text;
  // `pid` through a Unix socket is unwind's own call: it needs no helper,
  // and says that no server listens there.
  const ToolOutput pid = RunArgs(
      {"env", "-u", "RUNFILES_DIR", copy, "--server=unix:/nonexistent.sock", "pid", "1"});
  EXPECT_EQ(pid.exit_code, 1);
  EXPECT_EQ(pid.stderr_text,
            "unwind: cannot reach unwindd at unix:/nonexistent.sock: /nonexistent.sock: No such "
            "file or directory\n");
  // Help needs no unwind_remote.
  const ToolOutput help =
      RunArgs({"env", "-u", "RUNFILES_DIR", copy, "--server=unix:/x.sock", "pid", "--help"});
  EXPECT_EQ(help.exit_code, 0) << help.stderr_text;
  EXPECT_TRUE(absl::StartsWith(help.stdout_text, "usage: unwind pid PID")) << help.stdout_text;
}

class UnwindPerfNewcomerTest : public testing::Test {
 protected:
  void SetUp() override {
    const std::string why = proc::perf::testing::CannotRecordReason();
    if (!why.empty()) GTEST_SKIP() << why;
    dir_ = absl::StrCat(testing::TempDir(), "/perf");
    std::filesystem::create_directories(dir_);
  }
  std::string Fixture() const { return harness::FixturePath("perf/perf_busy_O2_nofp_pie"); }
  std::string dir_;
};

// perf record -o - | unwind perf -: the README's form, on a real pipe.
TEST_F(UnwindPerfNewcomerTest, PipeModeOnStdin) {
  const ToolOutput out = Shell(absl::StrCat(
      // 3 s: perf's own start-up is part of it, and slow on a loaded machine.
      "cd '", dir_, "' && HOME='", dir_, "' timeout -s INT 3 perf record -q -e cpu-clock ",
      "--call-graph dwarf -o - -- '", Fixture(), "' 2>/dev/null | $UNWIND perf - --format json"));
  EXPECT_EQ(out.exit_code, 0) << out.stderr_text;
  EXPECT_TRUE(absl::StartsWith(out.stdout_text, "{\"samples\": [")) << out.stdout_text;
  EXPECT_TRUE(absl::StrContains(out.stdout_text, "\"frames\": [\n")) << out.stderr_text;
  EXPECT_FALSE(absl::StrContains(out.stderr_text, "unknown option")) << out.stderr_text;
}

// `unwind perf FIFO` waits for a writer, as cat does; the first SIGTERM
// (or SIGINT) only asks it to stop, which it cannot while the open waits,
// and the second ends it as the signal would.
TEST(UnwindNewcomerTest, ASecondSignalEndsAWaitingCommand) {
  const std::string fifo = absl::StrCat(testing::TempDir(), "/waiting.fifo");
  const ToolOutput out = Shell(absl::StrCat(
      "rm -f '", fifo, "' && mkfifo '", fifo, "' && { $UNWIND perf '", fifo,
      "' --format=json & p=$!; sleep 1; kill -TERM $p; sleep 1; kill -TERM $p; wait $p; ",
      "echo \"status $?\"; }"));
  EXPECT_TRUE(absl::StrContains(out.stdout_text, "status 143")) << out.stdout_text
                                                                 << out.stderr_text;
}

// A recording with neither user stacks nor call chains (perf record
// without -g): said once, with how to record. perf record -g keeps the
// kernel's call chains, which are the samples' frames, and a DWARF
// recording's stacks are unwound: neither says it.
TEST_F(UnwindPerfNewcomerTest, ARecordingWithoutDwarfStacksSaysSo) {
  const std::string says = "record with perf record --call-graph dwarf";
  for (const char* graph : {"", "-g"}) {
    SCOPED_TRACE(graph);
    const std::string data = absl::StrCat(dir_, "/graph", graph, ".data");
    const ToolOutput rec = Shell(absl::StrCat(
        "cd '", dir_, "' && HOME='", dir_, "' timeout -s INT 3 perf record -q -e cpu-clock ",
        graph, " -o '", data, "' -- '", Fixture(), "' >/dev/null 2>&1; test -s '", data, "'"));
    ASSERT_EQ(rec.exit_code, 0) << rec.stderr_text;
    const ToolOutput out = RunUnwind({"perf", data, "--format=json"});
    EXPECT_EQ(out.exit_code, 0) << out.stderr_text;
    if (*graph == '\0') {
      EXPECT_TRUE(absl::StrContains(out.stderr_text, says)) << out.stderr_text;
      EXPECT_EQ(out.stderr_text.find(says), out.stderr_text.rfind(says)) << out.stderr_text;
    } else {
      EXPECT_FALSE(absl::StrContains(out.stderr_text, says)) << out.stderr_text;
      EXPECT_TRUE(absl::StrContains(out.stdout_text, "\"method\": \"frame_pointer\""))
          << out.stdout_text.substr(0, 2000);
    }
  }
  absl::StatusOr<std::string> dwarf = proc::perf::testing::RecordWithPerf(
      {Fixture()}, dir_, "dwarf", proc::perf::testing::Mode::kFile, absl::Seconds(3));
  ASSERT_TRUE(dwarf.ok()) << dwarf.status();
  const ToolOutput good = RunUnwind({"perf", *dwarf, "-o", "/dev/null"});
  EXPECT_EQ(good.exit_code, 0) << good.stderr_text;
  EXPECT_FALSE(absl::StrContains(good.stderr_text, says)) << good.stderr_text;
}

}  // namespace
}  // namespace unwindd::service
