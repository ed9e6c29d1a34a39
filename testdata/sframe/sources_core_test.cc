// The same checks as sframe_live_test and fp_live_test, on cores: each
// fixture is dumped with gcore while its threads are parked, then
// `unwind core --sources=...` must give eu-stack --core's PCs, with "sframe"
// (resp. "frame_pointer") wherever that source can answer.
#include <iostream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "testdata/core/core_tools.h"
#include "testdata/harness/frames.h"
#include "testdata/harness/subprocess.h"
#include "testdata/harness/tools.h"
#include "testdata/sframe/fixtures.h"
#include "unwinder/module.h"

namespace unwindd::sframe_fixtures {
namespace {

struct Case {
  std::string name;
  bool sframe;  // else the frame-pointer variant of a Bazel fixture
};

int threads[2] = {0, 0}, matched[2] = {0, 0}, frames[2] = {0, 0};

class Summary : public ::testing::Environment {
 public:
  void TearDown() override {
    for (int s = 0; s < 2; ++s) {
      std::cout << (s ? "sframe" : "fp") << " (gcore): compared " << threads[s]
                << " threads with eu-stack --core, " << matched[s]
                << " matched; " << frames[s] << " frames by "
                << (s ? "sframe" : "frame pointer") << "\n";
    }
  }
};
const ::testing::Environment* const kSummary =
    ::testing::AddGlobalTestEnvironment(new Summary);

class SourcesCoreTest : public ::testing::TestWithParam<Case> {};

TEST_P(SourcesCoreTest, SamePcsAsEuStackAndTheSourceWhereItCan) {
  const Case& c = GetParam();
  const std::string exe =
      c.sframe ? SframeFixturePath(c.name) : harness::FixturePath(c.name);
  absl::StatusOr<harness::RunningProgram> program = harness::StartProgram(exe);
  ASSERT_TRUE(program.ok()) << program.status();
  absl::StatusOr<std::string> core = harness::Gcore(
      program->pid(), absl::StrCat(getenv("TEST_TMPDIR"), "/", c.name));
  ASSERT_TRUE(core.ok()) << core.status();
  program->Kill();

  absl::StatusOr<harness::UnwindCoreResult> ours = harness::UnwindCoreFrames(
      absl::StrCat(harness::RunfilesRoot(), "/service/unwind"), *core,
      {absl::StrCat("--exe=", exe),
       c.sframe ? "--sources=sframe,eh_frame" : "--sources=fp,eh_frame"});
  ASSERT_TRUE(ours.ok()) << ours.status();
  harness::SymbolNames names;
  absl::StatusOr<harness::ThreadFrames> eu =
      harness::EuStackCoreFrames(*core, exe, &names);
  ASSERT_TRUE(eu.ok()) << eu.status();
  harness::Comparison cmp = harness::CompareThreadFrames(
      "unwind", ours->frames.Pcs(), "eu-stack", *eu, &names);
  EXPECT_TRUE(cmp.ok()) << cmp.diff << ours->frames.Describe();

  MethodCheck m;
  if (c.sframe) {
    absl::StatusOr<GoldenSframe> golden = ReadGolden(c.name);
    ASSERT_TRUE(golden.ok()) << golden.status();
    m = CheckSframeMethods(ours->frames, c.name, *golden);
  } else {
    absl::StatusOr<std::shared_ptr<unwinder::Module>> module =
        unwinder::Module::OpenFile(exe);
    ASSERT_TRUE(module.ok()) << module.status();
    m = CheckFramePointerMethods(ours->frames, c.name, **module, names);
  }
  EXPECT_TRUE(m.failures.empty()) << absl::StrJoin(m.failures, "\n") << "\n"
                                  << ours->frames.Describe();
  EXPECT_GT(m.frames, 0);
  threads[c.sframe] += cmp.threads;
  matched[c.sframe] += cmp.matched;
  frames[c.sframe] += m.frames;
  std::cout << c.name << ": " << cmp.threads << " threads, " << cmp.matched
            << " matched, " << m.frames << " frames by the source\n";
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, SourcesCoreTest,
    ::testing::Values(Case{"threads_c_sframe_v1_pie", true},
                      Case{"threads_c_sframe_v2_nopie", true},
                      Case{"threads_c_sframe_v3_pie", true},
                      Case{"realign_sframe_v3_nopie", true},
                      Case{"signal_handler_sframe_v3_nopie", true},
                      Case{"threads_c_O2_fp_nopie", false},
                      Case{"signal_handler_O3_fp_nopie", false},
                      Case{"cxx_catch_O3_fp_pie", false}),
    [](const auto& i) { return i.param.name; });

}  // namespace
}  // namespace unwindd::sframe_fixtures
