// Our `unwind` CLI must report the same frame PCs as eu-stack and gdb for
// every thread of every fixture variant. The tools agree with each other on
// all of these (tools_agree_test.cc), so a mismatch is ours.
//
// Each tool attaches in turn to the same parked process; the threads do not
// move in between (the harness waits until every thread is settled in its
// blocking syscall), so all three see the same registers and stacks.
#include <iostream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "testdata/harness/frames.h"
#include "testdata/harness/subprocess.h"
#include "testdata/harness/tools.h"

namespace unwindd::harness {
namespace {

// Totals over all fixtures in this process (one shard), for the summary line.
int total_threads = 0;
int total_matched = 0;

class SummaryEnvironment : public ::testing::Environment {
 public:
  void TearDown() override {
    std::cout << "compared " << total_threads << " threads, " << total_matched
              << " matched\n";
  }
};

const ::testing::Environment* const kSummary =
    ::testing::AddGlobalTestEnvironment(new SummaryEnvironment);

std::string UnwindBinary() {
  return absl::StrCat(RunfilesRoot(), "/service/unwind");
}

class UnwindMatchesToolsTest : public ::testing::TestWithParam<std::string> {};

TEST_P(UnwindMatchesToolsTest, SamePcsAsEuStackAndGdb) {
  const std::string& variant = GetParam();
  absl::StatusOr<RunningProgram> program = StartProgram(FixturePath(variant));
  // An i386 fixture on a kernel that cannot execute it: nothing to compare.
  if (absl::IsUnimplemented(program.status())) GTEST_SKIP() << program.status();
  ASSERT_TRUE(program.ok()) << program.status();

  // Ours first: if it leaves the process in a bad state (e.g. fails to
  // detach), the tools that run after it will say so.
  absl::StatusOr<UnwindOutput> ours =
      UnwindFrames(UnwindBinary(), program->pid());
  ASSERT_TRUE(ours.ok()) << ours.status();
  SymbolNames names;
  absl::StatusOr<ThreadFrames> eu = EuStackFrames(program->pid(), &names);
  ASSERT_TRUE(eu.ok()) << eu.status();
  absl::StatusOr<ThreadFrames> gdb = GdbFrames(program->pid());
  ASSERT_TRUE(gdb.ok()) << gdb.status();

  const ThreadFrames pcs = ours->Pcs();
  // i386: where eu-stack stops right after main, we match gdb and hold
  // eu-stack to the prefix it printed (frames.h, ApplyI386EuStackRule).
  int cut = 0;
  const ThreadFrames pcs_for_eu =
      IsI386Variant(variant) ? ApplyI386EuStackRule(pcs, *eu, names, &cut)
                             : pcs;
  Comparison vs_eu =
      CompareThreadFrames("unwind", pcs_for_eu, "eu-stack", *eu, &names);
  Comparison vs_gdb = CompareThreadFrames("unwind", pcs, "gdb", *gdb, &names);
  // A thread counts as matched only if it matches both references.
  const int matched = CountMatchedBoth(pcs, pcs_for_eu, *eu, *gdb);
  total_threads += vs_eu.threads;
  total_matched += matched;

  EXPECT_TRUE(vs_eu.ok()) << variant << ": unwind differs from eu-stack\n"
                          << vs_eu.diff << "unwind's view:\n"
                          << ours->Describe();
  EXPECT_TRUE(vs_gdb.ok()) << variant << ": unwind differs from gdb\n"
                           << vs_gdb.diff;
  std::cout << variant << ": " << vs_eu.threads << " threads, " << matched
            << " matched";
  if (cut > 0) std::cout << " (" << cut << " where eu-stack stops after main)";
  std::cout << "\n";
}

INSTANTIATE_TEST_SUITE_P(Fixtures, UnwindMatchesToolsTest,
                         ::testing::ValuesIn(ListFixtureVariants()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

}  // namespace
}  // namespace unwindd::harness
