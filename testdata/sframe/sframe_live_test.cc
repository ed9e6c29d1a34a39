// `unwind pid --sources=sframe,eh_frame` on the x86_64 SFrame fixtures (v1,
// v2, v3; PIE and not; stack realignment through v3 flexible FDEs; signal
// frames), running: every thread's PCs equal eu-stack's, and every frame
// recovered from a PC the program's .sframe covers says "sframe" (glibc has
// no .sframe: its frames fall through to eh_frame).
#include <iostream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "testdata/harness/frames.h"
#include "testdata/harness/subprocess.h"
#include "testdata/harness/tools.h"
#include "testdata/sframe/fixtures.h"

namespace unwindd::sframe_fixtures {
namespace {

int total_threads = 0, total_matched = 0, total_sframe_frames = 0;

class Summary : public ::testing::Environment {
 public:
  void TearDown() override {
    std::cout << "sframe (live): compared " << total_threads
              << " threads with eu-stack, " << total_matched << " matched; "
              << total_sframe_frames << " frames recovered through .sframe\n";
  }
};
const ::testing::Environment* const kSummary =
    ::testing::AddGlobalTestEnvironment(new Summary);

std::vector<SframeFixture> Runnable() {
  std::vector<SframeFixture> out;
  for (const SframeFixture& f : SframeFixtures()) {
    if (f.x86_64 && f.disagreement != "planted") out.push_back(f);
  }
  return out;
}

class SframeLiveTest : public ::testing::TestWithParam<SframeFixture> {};

TEST_P(SframeLiveTest, SamePcsAsEuStackAndSframeWhereItCovers) {
  const SframeFixture& fx = GetParam();
  absl::StatusOr<GoldenSframe> golden = ReadGolden(fx.name);
  ASSERT_TRUE(golden.ok()) << golden.status();
  absl::StatusOr<harness::RunningProgram> program =
      harness::StartProgram(SframeFixturePath(fx.name));
  ASSERT_TRUE(program.ok()) << program.status();
  absl::StatusOr<LiveComparison> live =
      CompareLiveWithEuStack(program->pid(), "sframe,eh_frame");
  ASSERT_TRUE(live.ok()) << live.status();
  const harness::Comparison& c = live->vs_eu_stack;
  EXPECT_TRUE(c.ok()) << c.diff << live->ours.Describe();
  MethodCheck m = CheckSframeMethods(live->ours, fx.name, *golden);
  EXPECT_TRUE(m.failures.empty()) << absl::StrJoin(m.failures, "\n") << "\n"
                                  << live->ours.Describe();
  EXPECT_GT(m.frames, 0);
  total_threads += c.threads;
  total_matched += c.matched;
  total_sframe_frames += m.frames;
  std::cout << fx.name << ": " << c.threads << " threads, " << c.matched
            << " matched, " << m.frames << " frames by sframe\n";
}

INSTANTIATE_TEST_SUITE_P(Fixtures, SframeLiveTest,
                         ::testing::ValuesIn(Runnable()),
                         [](const auto& i) { return i.param.name; });

}  // namespace
}  // namespace unwindd::sframe_fixtures
