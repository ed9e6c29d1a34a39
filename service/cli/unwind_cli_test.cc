// The `unwind` binary as a user runs it: exit codes and one-line errors, the
// demo, --tid, a program whose executable was deleted while it runs, detach
// afterwards, and a caller that may not ptrace the target.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"
#include "testdata/harness/frames.h"
#include "testdata/harness/subprocess.h"
#include "testdata/harness/tools.h"

// Under --config=asan the fixture programs link ASan's runtime, whose
// shadow memory (terabytes of reserved address space) gcore tries to dump:
// it does not finish within the tools' time bound. The core halves of
// these tests run in the normal suite.
#if defined(__SANITIZE_ADDRESS__)
#define UNWINDD_FIXTURES_HAVE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNWINDD_FIXTURES_HAVE_ASAN 1
#endif
#endif

namespace unwindd::service {
namespace {

using harness::RunTool;
using harness::ToolOutput;

std::string UnwindBinary() {
  return harness::RunfilesRoot() + "/service/unwind";
}

ToolOutput RunUnwind(std::vector<std::string> args) {
  args.insert(args.begin(), UnwindBinary());
  absl::StatusOr<ToolOutput> out = RunTool(args, absl::Seconds(60));
  EXPECT_TRUE(out.ok()) << out.status();
  return out.value_or(ToolOutput{});
}

// The error is exactly one line on stderr, and nothing is on stdout.
void ExpectOneLineError(const ToolOutput& out, absl::string_view contains) {
  EXPECT_NE(out.exit_code, 0);
  EXPECT_EQ(out.stdout_text, "");
  std::vector<std::string> lines =
      absl::StrSplit(out.stderr_text, '\n', absl::SkipEmpty());
  ASSERT_GE(lines.size(), 1u) << out.stderr_text;
  EXPECT_TRUE(absl::StartsWith(lines[0], "unwind: ")) << lines[0];
  EXPECT_TRUE(absl::StrContains(lines[0], contains)) << lines[0];
}

int TracerPid(pid_t tid) {
  std::ifstream f(absl::StrCat("/proc/", tid, "/status"));
  std::string text;
  while (std::getline(f, text)) {
    absl::string_view line = text;
    int v = -1;
    if (absl::ConsumePrefix(&line, "TracerPid:") &&
        absl::SimpleAtoi(absl::StripAsciiWhitespace(line), &v)) {
      return v;
    }
  }
  return -1;
}

std::vector<pid_t> Tasks(pid_t pid) {
  std::vector<pid_t> out;
  for (const auto& e : std::filesystem::directory_iterator(absl::StrCat("/proc/", pid, "/task"))) {
    out.push_back(std::stoi(e.path().filename()));
  }
  return out;
}

TEST(UnwindCliTest, DemoPrintsEveryThreadToTheEnd) {
  ToolOutput out = RunUnwind({"demo", "--format=json"});
  ASSERT_EQ(out.exit_code, 0) << out.stderr_text;
  absl::StatusOr<harness::UnwindOutput> parsed = harness::ParseUnwindJson(out.stdout_text);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->threads.size(), 5u) << parsed->Describe();
  for (const auto& [tid, t] : parsed->threads) {
    EXPECT_EQ(t.stop, "end_of_stack") << parsed->Describe();
    ASSERT_GE(t.frames.size(), 4u);
    EXPECT_EQ(t.frames[0].method, "initial");
    for (size_t i = 1; i < t.frames.size(); ++i) EXPECT_EQ(t.frames[i].method, "eh_frame");
    for (const harness::UnwindFrame& f : t.frames) EXPECT_FALSE(f.module.empty());
  }
  ToolOutput text = RunUnwind({"demo"});
  ASSERT_EQ(text.exit_code, 0);
  EXPECT_TRUE(absl::StrContains(text.stdout_text, " - process\nTID ")) << text.stdout_text;
  EXPECT_TRUE(absl::StrContains(text.stdout_text, "#0  0x")) << text.stdout_text;
}

TEST(UnwindCliTest, OneThreadAndDetachAfterwards) {
  absl::StatusOr<harness::RunningProgram> p =
      harness::StartProgram(harness::FixturePath("threads_c_O2_nofp_pie"));
  ASSERT_TRUE(p.ok()) << p.status();
  std::vector<pid_t> tasks = Tasks(p->pid());
  ASSERT_GE(tasks.size(), 3u);
  pid_t tid = tasks.back() == p->pid() ? tasks.front() : tasks.back();
  ToolOutput out = RunUnwind({"pid", absl::StrCat(p->pid()), absl::StrCat("--tid=", tid),
                        "--format=json"});
  ASSERT_EQ(out.exit_code, 0) << out.stderr_text;
  absl::StatusOr<harness::UnwindOutput> parsed = harness::ParseUnwindJson(out.stdout_text);
  ASSERT_TRUE(parsed.ok());
  ASSERT_EQ(parsed->threads.size(), 1u);
  EXPECT_EQ(parsed->threads.begin()->first, tid);
  // Every thread is running free again.
  for (pid_t t : Tasks(p->pid())) EXPECT_EQ(TracerPid(t), 0) << "tid " << t;

  ToolOutput bad_tid = RunUnwind({"pid", absl::StrCat(p->pid()), "--tid=1"});
  ExpectOneLineError(bad_tid, "thread 1");
}

// A module's ELF package note (ld's --package-metadata) is its "package"
// object, read from the module the unwind opened; Debian's libc has none.
TEST(UnwindCliTest, PackageNoteOfALiveProcess) {
  absl::StatusOr<harness::RunningProgram> p =
      harness::StartProgram(harness::RunfilesRoot() + "/testdata/coredump/crasher");
  ASSERT_TRUE(p.ok()) << p.status();
  ToolOutput out = RunUnwind({"pid", absl::StrCat(p->pid()), "--format=json"});
  ASSERT_EQ(out.exit_code, 0) << out.stderr_text;
  EXPECT_EQ(out.stderr_text, "");
  ASSERT_TRUE(harness::ParseUnwindJson(out.stdout_text).ok());
  EXPECT_TRUE(absl::StrContains(out.stdout_text, "\"package\": {\"type\": \"deb\""))
      << out.stdout_text;
  EXPECT_TRUE(absl::StrContains(out.stdout_text,
                                "\"name\": \"unwindd-crasher\", \"version\": \"1.2-3\""))
      << out.stdout_text;
  // Each frame of the crasher has it, and no frame of libc's.
  int crasher_frames = 0, libc_frames = 0;
  for (absl::string_view line : absl::StrSplit(out.stdout_text, '\n')) {
    if (!absl::StrContains(line, "\"pc\": ")) continue;
    const bool crasher = absl::StrContains(line, "/testdata/coredump/crasher\"");
    crasher_frames += crasher;
    libc_frames += absl::StrContains(line, "/libc.so.6\"");
    EXPECT_EQ(absl::StrContains(line, "\"package\": {\"type\": \"deb\""), crasher) << line;
  }
  EXPECT_GE(crasher_frames, 3);
  EXPECT_GE(libc_frames, 1);
}

TEST(UnwindCliTest, MaxFrames) {
  absl::StatusOr<harness::RunningProgram> p =
      harness::StartProgram(harness::FixturePath("recursion_O2_nofp_pie"));
  ASSERT_TRUE(p.ok()) << p.status();
  ToolOutput out = RunUnwind({"pid", absl::StrCat(p->pid()), "--max-frames=10", "--format=json"});
  ASSERT_EQ(out.exit_code, 0) << out.stderr_text;
  absl::StatusOr<harness::UnwindOutput> parsed = harness::ParseUnwindJson(out.stdout_text);
  ASSERT_TRUE(parsed.ok());
  bool some_truncated = false;
  for (const auto& [tid, t] : parsed->threads) {
    EXPECT_LE(t.frames.size(), 10u);
    some_truncated |= t.stop == "max_frames";
  }
  EXPECT_TRUE(some_truncated) << parsed->Describe();
}

// The executable is gone from the file system: its frames still unwind,
// through /proc/PID/map_files, exactly as before it was deleted.
TEST(UnwindCliTest, DeletedExecutable) {
  std::string copy = absl::StrCat(testing::TempDir(), "/deleted_demo");
  std::filesystem::copy_file(harness::FixturePath("threads_c_O2_nofp_pie"), copy,
                             std::filesystem::copy_options::overwrite_existing);
  absl::StatusOr<harness::RunningProgram> p = harness::StartProgram(copy);
  ASSERT_TRUE(p.ok()) << p.status();
  ToolOutput before = RunUnwind({"pid", absl::StrCat(p->pid()), "--format=json"});
  ASSERT_EQ(before.exit_code, 0);
  ASSERT_EQ(unlink(copy.c_str()), 0);
  ToolOutput after = RunUnwind({"pid", absl::StrCat(p->pid()), "--format=json"});
  ASSERT_EQ(after.exit_code, 0) << after.stderr_text;
  absl::StatusOr<harness::UnwindOutput> a = harness::ParseUnwindJson(before.stdout_text);
  absl::StatusOr<harness::UnwindOutput> b = harness::ParseUnwindJson(after.stdout_text);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->Pcs(), b->Pcs()) << a->Describe() << "\n---\n" << b->Describe();
  for (const auto& [tid, t] : b->threads) EXPECT_EQ(t.stop, "end_of_stack") << b->Describe();
}

// A module path that is not UTF-8 (any bytes can name a file): the JSON
// stays valid (python3's strict decoder reads it) and gives the bytes back,
// one "\u00XX" per byte that is not UTF-8; the same for a core of it.
TEST(UnwindCliTest, PathsThatAreNotUtf8AreValidJson) {
#ifdef UNWINDD_FIXTURES_HAVE_ASAN
  GTEST_SKIP() << "gcore of a fixture that links ASan's runtime does not finish";
#endif
  const std::string dir = absl::StrCat(testing::TempDir(), "/bad\xff\xc3(utf8");
  std::filesystem::create_directories(dir);
  const std::string copy = dir + "/threads_\xe9";
  std::filesystem::copy_file(harness::FixturePath("threads_c_O2_nofp_pie"), copy,
                             std::filesystem::copy_options::overwrite_existing);
  absl::StatusOr<harness::RunningProgram> p = harness::StartProgram(copy);
  ASSERT_TRUE(p.ok()) << p.status();
  const std::string json = absl::StrCat(testing::TempDir(), "/not_utf8.json");
  const std::string core = absl::StrCat(testing::TempDir(), "/not_utf8.core");
  ToolOutput live = RunUnwind({"pid", absl::StrCat(p->pid()), "--format=json"});
  ASSERT_EQ(live.exit_code, 0) << live.stderr_text;
  absl::StatusOr<ToolOutput> gcore =
      RunTool({"gcore", "-o", core, absl::StrCat(p->pid())}, absl::Seconds(60));
  ASSERT_TRUE(gcore.ok() && gcore->exit_code == 0) << "gcore failed";
  ToolOutput from_core =
      RunUnwind({"core", absl::StrCat(core, ".", p->pid()), "--format=json"});
  ASSERT_EQ(from_core.exit_code, 0) << from_core.stderr_text;
  // python3: strict UTF-8, strict JSON; prints the module paths as bytes
  // (latin-1 maps U+0000..U+00FF back to one byte each), hex-encoded.
  const std::string script =
      "import json,sys\n"
      "doc = json.loads(sys.stdin.buffer.read().decode('utf-8', 'strict'))\n"
      "mods = {f['module'] for t in doc['threads'] for f in t['frames'] if 'module' in f}\n"
      "print(' '.join(sorted(m.encode('latin-1', 'replace').hex() for m in mods)), '')\n";
  for (const ToolOutput* out : {&live, &from_core}) {
    const std::string in = absl::StrCat(testing::TempDir(), "/in.json");
    {
      std::ofstream f(in, std::ios::binary);
      f << out->stdout_text;
    }
    absl::StatusOr<ToolOutput> py = RunTool(
        {"sh", "-c", absl::StrCat("python3 -c \"$0\" < ", in), script}, absl::Seconds(60));
    ASSERT_TRUE(py.ok()) << py.status();
    ASSERT_EQ(py->exit_code, 0) << py->stderr_text;
    // The copy's path, byte for byte, is among the modules (TempDir() may
    // name the directory differently: its last components).
    std::string hex;
    for (unsigned char c : std::string("/bad\xff\xc3(utf8/threads_\xe9")) {
      absl::StrAppendFormat(&hex, "%02x", c);
    }
    hex += " ";
    EXPECT_TRUE(absl::StrContains(py->stdout_text, hex)) << py->stdout_text;
  }
}

TEST(UnwindCliTest, Errors) {
  ExpectOneLineError(RunUnwind({"pid", "999999999"}), "999999999");
  ExpectOneLineError(RunUnwind({"pid", "2"}), "kernel thread");
  ToolOutput usage = RunUnwind({"pid"});
  EXPECT_EQ(usage.exit_code, 2);
  EXPECT_TRUE(absl::StartsWith(usage.stderr_text, "unwind: ")) << usage.stderr_text;
  EXPECT_EQ(RunUnwind({"--help"}).exit_code, 0);
}

// An unprivileged caller may not unwind a root-owned process: a clear
// PermissionDenied, and the target is left alone.
TEST(UnwindCliTest, PermissionDeniedForOtherUsersProcess) {
  if (getuid() != 0 || access("/usr/bin/setpriv", X_OK) != 0) {
    GTEST_SKIP() << "needs root and setpriv to drop privileges";
  }
  // The test's runfiles may sit under a directory nobody cannot enter.
  std::string copy = absl::StrCat(testing::TempDir(), "/unwind_unprivileged");
  std::filesystem::copy_file(UnwindBinary(), copy,
                             std::filesystem::copy_options::overwrite_existing);
  chmod(copy.c_str(), 0755);
  chmod(testing::TempDir().c_str(), 0755);
  absl::StatusOr<harness::RunningProgram> p =
      harness::StartProgram(harness::FixturePath("threads_c_O2_nofp_pie"));
  ASSERT_TRUE(p.ok()) << p.status();
  absl::StatusOr<ToolOutput> out = RunTool(
      {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", copy, "pid",
       absl::StrCat(p->pid())},
      absl::Seconds(30));
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectOneLineError(*out, "");
  EXPECT_TRUE(absl::StrContains(out->stderr_text, "ermission")) << out->stderr_text;
  for (pid_t t : Tasks(p->pid())) EXPECT_EQ(TracerPid(t), 0);
}

}  // namespace
}  // namespace unwindd::service
