// `unwind pid --sources=fp,eh_frame` on the -fno-omit-frame-pointer fixture
// variants, running: every thread's PCs equal eu-stack's, and the frame
// pointer answers exactly where it can. The oracle for "can" is the
// compiler's own CFI: where .eh_frame says the frame record is in place
// (CFA = rbp + 16, or rbp saved at [rbp] in realigned frames) the frame must
// say "frame_pointer" — except in .cold
// partitions, whose prologue is in another function — and where it says
// anything else (leaf functions, libc) it must not.
#include <iostream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "testdata/harness/frames.h"
#include "testdata/harness/subprocess.h"
#include "testdata/harness/tools.h"
#include "unwinder/module.h"

namespace unwindd::harness {
namespace {

int total_threads = 0, total_matched = 0, total_fp_frames = 0;

class Summary : public ::testing::Environment {
 public:
  void TearDown() override {
    std::cout << "fp: compared " << total_threads << " threads with eu-stack, "
              << total_matched << " matched; " << total_fp_frames
              << " frames recovered through the frame pointer\n";
  }
};
const ::testing::Environment* const kSummary =
    ::testing::AddGlobalTestEnvironment(new Summary);

std::string Basename(absl::string_view path) {
  return std::string(path.substr(path.rfind('/') + 1));
}

class FpLiveTest : public ::testing::TestWithParam<std::string> {};

TEST_P(FpLiveTest, SamePcsAsEuStackAndFramePointerWhereTheRecordIs) {
  const std::string& name = GetParam();
  absl::StatusOr<std::shared_ptr<unwinder::Module>> module =
      unwinder::Module::OpenFile(FixturePath(name));
  ASSERT_TRUE(module.ok()) << module.status();
  absl::StatusOr<RunningProgram> program = StartProgram(FixturePath(name));
  ASSERT_TRUE(program.ok()) << program.status();
  absl::StatusOr<UnwindOutput> ours =
      UnwindFrames(absl::StrCat(RunfilesRoot(), "/service/unwind"), program->pid(),
                   {"--sources=fp,eh_frame"});
  ASSERT_TRUE(ours.ok()) << ours.status();
  SymbolNames names;
  absl::StatusOr<ThreadFrames> eu = EuStackFrames(program->pid(), &names);
  ASSERT_TRUE(eu.ok()) << eu.status();

  Comparison c = CompareThreadFrames("unwind", ours->Pcs(), "eu-stack", *eu, &names);
  EXPECT_TRUE(c.ok()) << c.diff << ours->Describe();
  const unwinder::SourcePolicy eh_only =
      unwinder::SourcePolicy::Of({unwinder::Source::kEhFrame});
  int fp_frames = 0;
  for (const auto& [tid, thread] : ours->threads) {
    for (size_t i = 1; i < thread.frames.size(); ++i) {
      const UnwindFrame& callee = thread.frames[i - 1];
      const UnwindFrame& frame = thread.frames[i];
      if (frame.method == "frame_pointer") ++fp_frames;
      if (Basename(callee.module) != name) continue;
      uint64_t rel = 0;
      ASSERT_TRUE(ParseHexPc(callee.rel_pc, &rel));
      const bool exact = i - 1 == 0 || callee.method == "signal";
      absl::StatusOr<unwinder::ModuleRow> cfi =
          (*module)->FindRow(exact ? rel : rel - 1, eh_only, exact);
      ASSERT_TRUE(cfi.ok()) << cfi.status();
      // The record {saved rbp, return address} is at rbp when the CFI says
      // CFA = rbp + 16 with rbp saved at CFA - 16, or — stack realignment
      // with a DRAP register — "rbp is saved at [rbp + 0]" (gcc copies the
      // return address next to it).
      const unwinder::Row& r = cfi->row;
      const bool classic = r.cfa.kind == unwinder::CfaRule::Kind::kRegOffset &&
                           r.cfa.reg == 6 && r.cfa.offset == 16 &&
                           r.regs[6].kind == unwinder::RegisterRule::Kind::kOffset &&
                           r.regs[6].value == -16;
      const bool drap = r.regs[6].kind == unwinder::RegisterRule::Kind::kExpression &&
                        r.regs[6].expr.size() == 2 && r.regs[6].expr[0] == 0x76 &&
                        r.regs[6].expr[1] == 0;
      const bool record = classic || drap;
      const std::string symbol = names.count(callee.pc) ? names.at(callee.pc) : "";
      SCOPED_TRACE(absl::StrCat(name, " tid ", tid, " frame ", i, " from ",
                                callee.rel_pc, " ", symbol));
      if (record && !absl::StrContains(symbol, ".cold")) {
        EXPECT_EQ(frame.method, "frame_pointer") << ours->Describe();
      } else if (!record) {
        EXPECT_NE(frame.method, "frame_pointer") << ours->Describe();
      }
    }
  }
  EXPECT_GT(fp_frames, 0);
  int matched = 0;
  for (const auto& [tid, frames] : ours->Pcs()) {
    auto e = eu->find(tid);
    if (e != eu->end() && e->second == frames) ++matched;
  }
  total_threads += c.threads;
  total_matched += matched;
  total_fp_frames += fp_frames;
  std::cout << name << ": " << c.threads << " threads, " << matched << " matched, "
            << fp_frames << " frames by frame pointer\n";
}

// Every x86_64 variant built with -fno-omit-frame-pointer (testdata/BUILD).
INSTANTIATE_TEST_SUITE_P(
    Fixtures, FpLiveTest,
    ::testing::Values("threads_c_O0_fp_pie", "threads_c_O2_fp_nopie",
                      "signal_handler_O3_fp_nopie", "recursion_O0_fp_nopie",
                      "realign_O3_fp_nopie", "demo_O0_fp_pie", "demo_O3_fp_nopie",
                      "cxx_catch_O3_fp_pie"),
    [](const auto& i) { return i.param; });

}  // namespace
}  // namespace unwindd::harness
