// i386 cores: our 64-bit `unwind core` on a gcore dump of every 32-bit
// fixture variant (_m32, variants.bzl) reports, thread for thread, the frame
// PCs gdb and `eu-stack --core` report for the same core.
//
// Findings (elfutils 0.188, gdb 13.1, glibc 2.36 i386): on cores eu-stack
// does walk the main thread past main to _start, like gdb, unlike on live
// i386 processes; the i386 rule of the live tests (frames.h,
// ApplyI386EuStackRule) is still applied to eu-stack so that the test states
// one rule for i386: we match gdb; eu-stack may stop right after main.
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "testdata/harness/frames.h"
#include "testdata/harness/subprocess.h"
#include "testdata/harness/tools.h"

namespace unwindd::harness {
namespace {

int total_threads = 0;
int total_matched = 0;

class SummaryEnvironment : public ::testing::Environment {
 public:
  void TearDown() override {
    std::cout << "i386 cores: compared " << total_threads << " threads, "
              << total_matched << " matched\n";
  }
};

const ::testing::Environment* const kSummary =
    ::testing::AddGlobalTestEnvironment(new SummaryEnvironment);

std::string TmpPath(const std::string& name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  return absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/", name);
}

std::vector<std::string> I386Variants() {
  std::vector<std::string> out;
  for (const std::string& v : ListFixtureVariants()) {
    if (IsI386Variant(v)) out.push_back(v);
  }
  return out;
}

class I386CoreTest : public ::testing::TestWithParam<std::string> {};

TEST_P(I386CoreTest, SamePcsAsEuStackAndGdb) {
  const std::string& variant = GetParam();
  const std::string exe = FixturePath(variant);
  const std::string core = TmpPath(absl::StrCat(variant, ".core"));
  {
    absl::StatusOr<RunningProgram> program = StartProgram(exe);
    // An i386 fixture on a kernel that cannot execute it: nothing to compare.
    if (absl::IsUnimplemented(program.status())) GTEST_SKIP() << program.status();
    ASSERT_TRUE(program.ok()) << program.status();
    absl::StatusOr<ToolOutput> gcore = RunTool(
        {"gdb", "-nx", "-batch", "-iex", "set debuginfod enabled off", "-p",
         absl::StrCat(program->pid()), "-ex", absl::StrCat("gcore ", core)},
        kToolTimeout);
    ASSERT_TRUE(gcore.ok()) << gcore.status();
    ASSERT_EQ(gcore->exit_code, 0) << gcore->stderr_text;
  }  // the program is killed here: everything below reads the core only

  absl::StatusOr<ToolOutput> ours =
      RunTool({absl::StrCat(RunfilesRoot(), "/service/unwind"), "core", core,
               absl::StrCat("--exe=", exe), "--format=json",
               "--max-frames=4096"},
              kToolTimeout);
  ASSERT_TRUE(ours.ok()) << ours.status();
  ASSERT_EQ(ours->exit_code, 0) << ours->stderr_text;
  absl::StatusOr<UnwindOutput> parsed = ParseUnwindJson(ours->stdout_text);
  ASSERT_TRUE(parsed.ok()) << parsed.status();

  SymbolNames names;
  absl::StatusOr<ToolOutput> eu_out =
      RunTool({"eu-stack", "-n", "0", absl::StrCat("--core=", core),
               absl::StrCat("--executable=", exe)},
              kToolTimeout);
  ASSERT_TRUE(eu_out.ok()) << eu_out.status();
  ASSERT_EQ(eu_out->exit_code, 0) << eu_out->stderr_text;
  absl::StatusOr<ThreadFrames> eu = ParseEuStackOutput(eu_out->stdout_text, &names);
  ASSERT_TRUE(eu.ok()) << eu.status();

  const std::string script = TmpPath("frames.py");
  std::ofstream(script) << kGdbFramesScript;
  absl::StatusOr<ToolOutput> gdb_out = RunTool(
      {"gdb", "-nx", "-batch", "-iex", "set debuginfod enabled off", "-ex",
       "set backtrace past-main on", "-ex", "set backtrace past-entry on",
       "-ex", absl::StrCat("core-file ", core), "-ex",
       absl::StrCat("source ", script), exe},
      kToolTimeout);
  ASSERT_TRUE(gdb_out.ok()) << gdb_out.status();
  absl::StatusOr<ThreadFrames> gdb = ParseGdbOutput(gdb_out->stdout_text);
  ASSERT_TRUE(gdb.ok()) << gdb.status() << "\n" << gdb_out->stderr_text;

  const ThreadFrames pcs = parsed->Pcs();
  int cut = 0;
  const ThreadFrames pcs_for_eu = ApplyI386EuStackRule(pcs, *eu, names, &cut);
  Comparison vs_eu =
      CompareThreadFrames("unwind", pcs_for_eu, "eu-stack", *eu, &names);
  Comparison vs_gdb = CompareThreadFrames("unwind", pcs, "gdb", *gdb, &names);
  const int matched = CountMatchedBoth(pcs, pcs_for_eu, *eu, *gdb);
  total_threads += vs_gdb.threads;
  total_matched += matched;
  EXPECT_TRUE(vs_eu.ok()) << variant << ": unwind differs from eu-stack\n"
                          << vs_eu.diff << "unwind's view:\n"
                          << parsed->Describe();
  EXPECT_TRUE(vs_gdb.ok()) << variant << ": unwind differs from gdb\n"
                           << vs_gdb.diff;
  EXPECT_GE(pcs.size(), 4u);
  std::cout << variant << " core: " << vs_gdb.threads << " threads, "
            << matched << " matched";
  if (cut > 0) std::cout << " (" << cut << " where eu-stack stops after main)";
  std::cout << "\n";
}

INSTANTIATE_TEST_SUITE_P(Fixtures, I386CoreTest,
                         ::testing::ValuesIn(I386Variants()),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                           return i.param;
                         });

}  // namespace
}  // namespace unwindd::harness
