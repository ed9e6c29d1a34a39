// `unwind pid --sources=fp,eh_frame` on the -fno-omit-frame-pointer fixture
// variants, running: every thread's PCs equal eu-stack's, and the frame
// pointer answers exactly where it can, with the compiler's own CFI as the
// oracle (see CheckFramePointerMethods): leaf functions, .cold partitions
// and libc go to eh_frame.
#include <iostream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "testdata/harness/frames.h"
#include "testdata/harness/subprocess.h"
#include "testdata/harness/tools.h"
#include "testdata/sframe/fixtures.h"
#include "unwinder/module.h"

namespace unwindd::sframe_fixtures {
namespace {

int total_threads = 0, total_matched = 0, total_fp_frames = 0;

class Summary : public ::testing::Environment {
 public:
  void TearDown() override {
    std::cout << "fp (live): compared " << total_threads
              << " threads with eu-stack, " << total_matched << " matched; "
              << total_fp_frames
              << " frames recovered through the frame pointer\n";
  }
};
const ::testing::Environment* const kSummary =
    ::testing::AddGlobalTestEnvironment(new Summary);

class FpLiveTest : public ::testing::TestWithParam<std::string> {};

TEST_P(FpLiveTest, SamePcsAsEuStackAndFramePointerWhereTheRecordIs) {
  const std::string& name = GetParam();
  absl::StatusOr<std::shared_ptr<unwinder::Module>> module =
      unwinder::Module::OpenFile(harness::FixturePath(name));
  ASSERT_TRUE(module.ok()) << module.status();
  absl::StatusOr<harness::RunningProgram> program =
      harness::StartProgram(harness::FixturePath(name));
  ASSERT_TRUE(program.ok()) << program.status();
  absl::StatusOr<LiveComparison> live =
      CompareLiveWithEuStack(program->pid(), "fp,eh_frame");
  ASSERT_TRUE(live.ok()) << live.status();
  const harness::Comparison& c = live->vs_eu_stack;
  EXPECT_TRUE(c.ok()) << c.diff << live->ours.Describe();
  MethodCheck m = CheckFramePointerMethods(live->ours, name, **module, live->names);
  EXPECT_TRUE(m.failures.empty()) << absl::StrJoin(m.failures, "\n") << "\n"
                                  << live->ours.Describe();
  EXPECT_GT(m.frames, 0);
  total_threads += c.threads;
  total_matched += c.matched;
  total_fp_frames += m.frames;
  std::cout << name << ": " << c.threads << " threads, " << c.matched
            << " matched, " << m.frames << " frames by frame pointer\n";
}

// Every x86_64 variant built with -fno-omit-frame-pointer (testdata/BUILD).
INSTANTIATE_TEST_SUITE_P(
    Fixtures, FpLiveTest,
    ::testing::Values("threads_c_O0_fp_pie", "threads_c_O2_fp_nopie",
                      "signal_handler_O3_fp_nopie", "recursion_O0_fp_nopie",
                      "realign_O3_fp_nopie", "demo_O0_fp_pie",
                      "demo_O3_fp_nopie", "cxx_catch_O3_fp_pie"),
    [](const auto& i) { return i.param; });

}  // namespace
}  // namespace unwindd::sframe_fixtures
