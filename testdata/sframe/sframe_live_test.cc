// `unwind pid --sources=sframe,eh_frame` on the x86_64 SFrame fixtures (v1,
// v2, v3; PIE and not; stack realignment through v3 flexible FDEs; signal
// frames), running: every thread's PCs equal eu-stack's, and every frame
// recovered from a PC the program's .sframe covers says "sframe" (glibc has
// no .sframe: its frames fall through to eh_frame).
#include <iostream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
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
    std::cout << "sframe: compared " << total_threads << " threads with eu-stack, "
              << total_matched << " matched; " << total_sframe_frames
              << " frames recovered through .sframe\n";
  }
};
const ::testing::Environment* const kSummary =
    ::testing::AddGlobalTestEnvironment(new Summary);

std::string Basename(absl::string_view path) {
  return std::string(path.substr(path.rfind('/') + 1));
}

// Whether the file address `pc` is in a function the golden dump lists.
bool Covered(const GoldenSframe& g, uint64_t pc) {
  for (const GoldenFunction& f : g.functions) {
    if (pc >= f.pc && pc - f.pc < f.size) return true;
  }
  return false;
}

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
  absl::StatusOr<harness::UnwindOutput> ours = harness::UnwindFrames(
      absl::StrCat(harness::RunfilesRoot(), "/service/unwind"), program->pid(),
      {"--sources=sframe,eh_frame"});
  ASSERT_TRUE(ours.ok()) << ours.status();
  harness::SymbolNames names;
  absl::StatusOr<harness::ThreadFrames> eu = harness::EuStackFrames(program->pid(), &names);
  ASSERT_TRUE(eu.ok()) << eu.status();

  harness::Comparison c =
      harness::CompareThreadFrames("unwind", ours->Pcs(), "eu-stack", *eu, &names);
  EXPECT_TRUE(c.ok()) << c.diff << ours->Describe();
  int sframe_frames = 0;
  for (const auto& [tid, thread] : ours->threads) {
    for (size_t i = 1; i < thread.frames.size(); ++i) {
      const harness::UnwindFrame& callee = thread.frames[i - 1];
      const harness::UnwindFrame& frame = thread.frames[i];
      if (frame.method == "sframe") ++sframe_frames;
      if (Basename(callee.module) != fx.name) {
        EXPECT_NE(frame.method, "sframe") << "tid " << tid << " frame " << i
                                          << " comes from " << callee.module;
        continue;
      }
      uint64_t rel = 0;
      ASSERT_TRUE(harness::ParseHexPc(callee.rel_pc, &rel)) << callee.rel_pc;
      // The lookup address: the return address minus one, except for frame
      // 0 and the frame a signal interrupted, whose PCs are exact.
      const bool exact = i - 1 == 0 || callee.method == "signal";
      const uint64_t lookup = exact ? rel : rel - 1;
      if (Covered(*golden, lookup)) {
        EXPECT_EQ(frame.method, "sframe")
            << fx.name << " tid " << tid << " frame " << i << " from " << callee.rel_pc
            << "\n" << ours->Describe();
      }
    }
  }
  EXPECT_GT(sframe_frames, 0);
  int matched = 0;
  const harness::ThreadFrames pcs = ours->Pcs();
  for (const auto& [tid, frames] : pcs) {
    auto e = eu->find(tid);
    if (e != eu->end() && e->second == frames) ++matched;
  }
  total_threads += c.threads;
  total_matched += matched;
  total_sframe_frames += sframe_frames;
  std::cout << fx.name << ": " << c.threads << " threads, " << matched << " matched, "
            << sframe_frames << " frames by sframe\n";
}

INSTANTIATE_TEST_SUITE_P(Fixtures, SframeLiveTest, ::testing::ValuesIn(Runnable()),
                         [](const auto& i) { return i.param.name; });

}  // namespace
}  // namespace unwindd::sframe_fixtures
