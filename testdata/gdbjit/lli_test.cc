// The GDB JIT interface on a real runtime: Debian's lli-14 runs an -O1 C
// program without frame pointers (clang-14 -O1 -fomit-frame-pointer), so
// only the CFI of the objects it registers (ET_REL, .rela.eh_frame) can
// walk its frames. It blocks in a leaf under a recursion of known depth.
// `unwind pid` on it and `unwind core` on a gcore core of it must give
// gdb's frames (gdb reads the GDB JIT interface itself), through the JIT
// frames (named leaf, rec x6, main) to lli's and libLLVM's frames below.
// Both of lli-14's JIT kinds: orc (LLJIT) and the default (MCJIT); both
// link with RuntimeDyld and register through GDBJITRegistrationListener.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "testdata/harness/frames.h"
#include "testdata/harness/subprocess.h"
#include "testdata/harness/tools.h"

namespace unwindd::harness {
namespace {

constexpr int kDepth = 6;  // rec's frames

constexpr char kProgram[] = R"(#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
volatile int stop;
__attribute__((noinline)) int leaf(int d) {
  printf("ready\n");
  fflush(stdout);
  while (!stop) pause();
  return d;
}
__attribute__((noinline)) int rec(int d) {
  if (d == 0) return leaf(d) + 1;
  return rec(d - 1) * 3 + d;
}
int main(void) { return rec(5) == 0; }
)";

std::string TmpPath(const std::string& name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  return absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/", name);
}

// Whether `tool` is on PATH.
bool OnPath(const std::string& tool) {
  const char* path = std::getenv("PATH");
  for (absl::string_view dir : absl::StrSplit(path != nullptr ? path : "", ':')) {
    if (!dir.empty() && access(absl::StrCat(dir, "/", tool).c_str(), X_OK) == 0) return true;
  }
  return false;
}

std::string UnwindBinary() { return absl::StrCat(RunfilesRoot(), "/service/unwind"); }

// The JIT frames of `ours` (modules named jit-symfile-0x...).
int JitFrames(const UnwindOutput& ours) {
  int n = 0;
  for (const auto& [tid, t] : ours.threads) {
    for (const auto& f : t.frames) n += absl::StartsWith(f.module, "jit-symfile-0x");
  }
  return n;
}

class LliTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    for (const char* tool : {"lli-14", "clang-14", "gdb"}) {
      if (!OnPath(tool)) GTEST_SKIP() << tool << " is not installed (scripts/deps.sh: llvm-14, clang-14, gdb)";
    }
  }
};

TEST_P(LliTest, LiveAndCoreMatchGdbThroughJitFrames) {
  const std::string kind = GetParam();
  const std::string src = TmpPath("rec.c"), ll = TmpPath("rec.ll");
  std::ofstream(src) << kProgram;
  absl::StatusOr<ToolOutput> cc = RunTool(
      {"clang-14", "-O1", "-fomit-frame-pointer", "-S", "-emit-llvm", src, "-o", ll}, kToolTimeout);
  ASSERT_TRUE(cc.ok()) << cc.status();
  ASSERT_EQ(cc->exit_code, 0) << cc->stderr_text;
  // StartProgram runs a path: a script that becomes lli.
  const std::string run = TmpPath(absl::StrCat("run-", kind, ".sh"));
  std::ofstream(run) << "#!/bin/sh\nexec lli-14 " << (kind == "orc" ? "--jit-kind=orc " : "")
                     << ll << "\n";
  ASSERT_EQ(chmod(run.c_str(), 0755), 0);
  const std::string core = TmpPath(absl::StrCat("lli-", kind, ".core"));
  ThreadFrames live_gdb;
  {
    absl::StatusOr<RunningProgram> p = StartProgram(run, absl::Seconds(60));
    ASSERT_TRUE(p.ok()) << p.status();
    absl::StatusOr<UnwindOutput> ours = UnwindFrames(UnwindBinary(), p->pid());
    ASSERT_TRUE(ours.ok()) << ours.status();
    absl::StatusOr<ThreadFrames> gdb = GdbFrames(p->pid());
    ASSERT_TRUE(gdb.ok()) << gdb.status();
    live_gdb = *gdb;
    Comparison c = CompareThreadFrames("unwind pid", ours->Pcs(), "gdb", *gdb);
    EXPECT_TRUE(c.ok()) << kind << ": unwind pid differs from gdb\n"
                        << c.diff << "unwind's view:\n"
                        << ours->Describe();
    EXPECT_GE(JitFrames(*ours), kDepth + 2) << ours->Describe();
    std::cout << kind << " live: " << c.threads << " threads, "
              << ours->threads.begin()->second.frames.size() << " frames in the first thread, "
              << JitFrames(*ours) << " of them JIT frames\n";
    absl::StatusOr<ToolOutput> gcore =
        RunTool({"gdb", "-nx", "-batch", "-iex", "set debuginfod enabled off", "-p",
                 absl::StrCat(p->pid()), "-ex", absl::StrCat("gcore ", core)},
                kToolTimeout);
    ASSERT_TRUE(gcore.ok()) << gcore.status();
    ASSERT_EQ(gcore->exit_code, 0) << gcore->stderr_text;
  }  // killed: the core alone from here

  absl::StatusOr<ToolOutput> out = RunTool(
      {UnwindBinary(), "core", core, "--format=json", "--max-frames=4096"}, kToolTimeout);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->exit_code, 0) << out->stderr_text;
  absl::StatusOr<UnwindOutput> ours = ParseUnwindJson(out->stdout_text);
  ASSERT_TRUE(ours.ok()) << ours.status();
  const std::string script = TmpPath("frames.py");
  std::ofstream(script) << kGdbFramesScript;
  absl::StatusOr<ToolOutput> gdb_out = RunTool(
      {"gdb", "-nx", "-batch", "-iex", "set debuginfod enabled off", "-ex",
       "set backtrace past-main on", "-ex", "set backtrace past-entry on", "-ex",
       absl::StrCat("core-file ", core), "-ex", absl::StrCat("source ", script), "/usr/bin/lli-14"},
      kToolTimeout);
  ASSERT_TRUE(gdb_out.ok()) << gdb_out.status();
  absl::StatusOr<ThreadFrames> gdb = ParseGdbOutput(gdb_out->stdout_text);
  ASSERT_TRUE(gdb.ok()) << gdb.status() << "\n" << gdb_out->stderr_text;
  Comparison c = CompareThreadFrames("unwind core", ours->Pcs(), "gdb", *gdb);
  EXPECT_TRUE(c.ok()) << kind << ": unwind core differs from gdb on the core\n"
                      << c.diff << "unwind's view:\n"
                      << ours->Describe();
  // gdb on the core saw what it saw live.
  Comparison same = CompareThreadFrames("gdb (core)", *gdb, "gdb (live)", live_gdb);
  EXPECT_TRUE(same.ok()) << same.diff;
  EXPECT_GE(JitFrames(*ours), kDepth + 2) << ours->Describe();
  std::cout << kind << " core: " << c.threads << " threads, " << JitFrames(*ours)
            << " JIT frames\n";
}

INSTANTIATE_TEST_SUITE_P(JitKinds, LliTest, ::testing::Values("orc", "mcjit"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

}  // namespace
}  // namespace unwindd::harness
