// eu-stack and gdb must report identical frame PCs for every thread of every
// fixture variant. They are the references unwind_matches_tools_test holds
// our unwinder to, so this test is what makes those references trustworthy:
// if the two ever disagree on a fixture, the fixture (or a tool) is broken
// and comparing our output against either would prove nothing.
//
// Findings (eu-stack 0.188, gdb 13.1, glibc 2.36, gcc 12, x86_64), on every
// variant in BUILD.bazel, over repeated runs: the two tools agree exactly on
// every thread, frame for frame, with no normalization at all:
//  - Same address kind per frame: frame 0 is the thread's PC, callers are the
//    return address as read (eu-stack's -a "- 1" mark only says it looked up
//    pc-1), and the frame after __restore_rt is the exact interrupted PC in
//    both, including a leaf interrupted mid-loop (signal_handler's spinner).
//  - Same outermost frame: _start for the main thread and clone3 for the
//    others, where glibc's CFI marks the return address undefined. gdb with
//    `past-main`/`past-entry` on stops there too ("outermost"); neither tool
//    adds a trailing pc-0 frame.
//  - INLINE_FRAME/TAILCALL_FRAME entries are gdb-only reconstructions; the
//    frame script drops them (tools.h) and what remains matches eu-stack.
// i386 (the _m32 variants): eu-stack ends the main thread's walk silently
// right after main, where gdb goes on to _start (frames.h,
// ApplyI386EuStackRule); apart from that the two agree exactly, and the
// other threads agree in full.
// The one disagreement seen while building the fixtures was code without any
// CFI (-fno-asynchronous-unwind-tables and no -g): gdb's prologue analyzer
// then loses the caller in -O2 code where eu-stack follows rbp. That is why
// no variant lacks CFI entirely (variants.bzl); it is a real difference in
// the tools, not something to normalize away.
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testdata/harness/frames.h"
#include "testdata/harness/subprocess.h"
#include "testdata/harness/tools.h"

namespace unwindd::harness {
namespace {

// Threads each program parks (fixture sources); a mismatch means a thread
// was missed or a fixture changed without this table.
int ExpectedThreads(const std::string& variant) {
  const std::string program = variant.substr(0, variant.find("_O"));
  if (program == "threads_c" || program == "demo" || program == "cxx_catch") {
    return 5;
  }
  if (program == "signal_handler" || program == "realign") return 4;
  if (program == "recursion") return 4;
  return -1;
}

class ToolsAgreeTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ToolsAgreeTest, SamePcsForEveryThread) {
  const std::string& variant = GetParam();
  absl::StatusOr<RunningProgram> program = StartProgram(FixturePath(variant));
  // An i386 fixture on a kernel that cannot execute it: nothing to compare.
  if (absl::IsUnimplemented(program.status())) GTEST_SKIP() << program.status();
  ASSERT_TRUE(program.ok()) << program.status();

  SymbolNames names;
  absl::StatusOr<ThreadFrames> eu = EuStackFrames(program->pid(), &names);
  ASSERT_TRUE(eu.ok()) << eu.status();
  absl::StatusOr<ThreadFrames> gdb = GdbFrames(program->pid());
  ASSERT_TRUE(gdb.ok()) << gdb.status();

  int cut = 0;
  const ThreadFrames gdb_for_eu =
      IsI386Variant(variant) ? ApplyI386EuStackRule(*gdb, *eu, names, &cut)
                             : *gdb;
  Comparison c =
      CompareThreadFrames("eu-stack", *eu, "gdb", gdb_for_eu, &names);
  EXPECT_TRUE(c.ok()) << variant << ": eu-stack and gdb disagree\n" << c.diff;
  // The rule is for the main thread only.
  EXPECT_LE(cut, 1) << variant;
  EXPECT_EQ(static_cast<int>(eu->size()), ExpectedThreads(variant));
  for (const auto& [tid, pcs] : *eu) {
    // Every thread starts at least in libc -> our code -> libc entry.
    EXPECT_GE(pcs.size(), 4u) << variant << " thread " << tid;
  }
  size_t frames = 0;
  for (const auto& [tid, pcs] : *eu) frames += pcs.size();
  std::cout << variant << ": " << c.threads << " threads, " << c.matched
            << " matched, " << frames << " frames\n";
}

// The fixtures come from this test's data: every variant in BUILD.bazel.
INSTANTIATE_TEST_SUITE_P(Fixtures, ToolsAgreeTest,
                         ::testing::ValuesIn(ListFixtureVariants()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

TEST(FixtureListTest, EveryProgramIsCovered) {
  std::vector<std::string> variants = ListFixtureVariants();
  for (const char* program : {"threads_c", "signal_handler", "recursion",
                              "realign", "demo", "cxx_catch"}) {
    EXPECT_THAT(
        variants,
        ::testing::Contains(::testing::StartsWith(absl::StrCat(program, "_O"))))
        << "no variant of " << program << " in " << RunfilesRoot();
  }
}

}  // namespace
}  // namespace unwindd::harness
