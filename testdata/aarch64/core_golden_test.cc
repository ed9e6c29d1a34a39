// Every committed aarch64 core (make_fixtures.sh) unwound by our 64-bit x86
// `unwind core NAME.core --sysroot=sysroot --exe=NAME` gives, thread for
// thread, the frames gdb-multiarch printed for the same run (NAME.gdb.txt).
//
// qemu-user cores have no NT_FILE and no code pages: the modules come from
// the core's r_debug/link_map, the files from the mini sysroot. Threads are
// paired by their frame-0 sp (the golden files carry gdb's thread numbers,
// which are qemu's CPU indexes, not the TIDs in the core). PCs are compared
// as they are: frame 0 is the thread's PC, callers are return addresses as
// read, the frame after the signal trampoline is the exact interrupted PC,
// and threads_O2_pac's return addresses are PAC-signed in the core and must
// come out stripped (its golden file says why it comes from a run without
// pointer authentication).
#include <cstdlib>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"
#include "testdata/harness/frames.h"
#include "testdata/harness/subprocess.h"
#include "testdata/harness/tools.h"

namespace unwindd::harness {
namespace {

const std::vector<std::string> kFixtures = {
    "threads_O0_fp", "threads_O2_nofp", "threads_O2_pac", "signal_O0_fp",
    "signal_O2_nofp"};

int total_threads = 0;
int total_matched = 0;

class SummaryEnvironment : public ::testing::Environment {
 public:
  void TearDown() override {
    std::cout << "aarch64 cores: compared " << total_threads << " threads, "
              << total_matched << " matched\n";
  }
};

const ::testing::Environment* const kSummary =
    ::testing::AddGlobalTestEnvironment(new SummaryEnvironment);

struct GoldenThread {
  uint64_t sp = 0;
  std::vector<uint64_t> pcs;
};

// "thread N sp=0x..", then "0x<pc> <name>" lines, then "end"; '#' comments.
absl::StatusOr<std::vector<GoldenThread>> ParseGolden(
    const std::string& text, SymbolNames* names) {
  std::vector<GoldenThread> out;
  bool open = false;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (line.empty() || line[0] == '#') continue;
    if (absl::ConsumePrefix(&line, "thread ")) {
      std::vector<absl::string_view> f = absl::StrSplit(line, " sp=");
      GoldenThread t;
      if (open || f.size() != 2 || !ParseHexPc(f[1], &t.sp)) {
        return absl::DataLossError(absl::StrCat("bad golden line: ", line));
      }
      out.push_back(t);
      open = true;
    } else if (line == "end") {
      open = false;
    } else {
      std::pair<absl::string_view, absl::string_view> f =
          absl::StrSplit(line, absl::MaxSplits(' ', 1));
      uint64_t pc = 0;
      if (!open || !ParseHexPc(f.first, &pc)) {
        return absl::DataLossError(absl::StrCat("bad golden line: ", line));
      }
      out.back().pcs.push_back(pc);
      (*names)[pc] = std::string(f.second);
    }
  }
  if (open || out.empty()) return absl::DataLossError("golden file cut short");
  return out;
}

std::string Slurp(const std::string& path) {
  absl::StatusOr<ToolOutput> out = RunTool({"cat", path}, absl::Seconds(10));
  return out.ok() ? out->stdout_text : "";
}

class AArch64CoreTest : public ::testing::TestWithParam<std::string> {};

TEST_P(AArch64CoreTest, MatchesGdbMultiarch) {
  const std::string& name = GetParam();
  const std::string dir = absl::StrCat(RunfilesRoot(), "/testdata/aarch64");
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string core = absl::StrCat(tmp ? tmp : "/tmp", "/", name, ".core");
  absl::StatusOr<ToolOutput> xz = RunTool(
      {"sh", "-c",
       absl::StrCat("xz -dc '", dir, "/", name, ".core.xz' > '", core, "'")},
      absl::Seconds(30));
  ASSERT_TRUE(xz.ok() && xz->exit_code == 0) << xz.status();

  SymbolNames names;
  absl::StatusOr<std::vector<GoldenThread>> golden =
      ParseGolden(Slurp(absl::StrCat(dir, "/", name, ".gdb.txt")), &names);
  ASSERT_TRUE(golden.ok()) << golden.status();

  absl::StatusOr<ToolOutput> out =
      RunTool({absl::StrCat(RunfilesRoot(), "/service/unwind"), "core", core,
               absl::StrCat("--sysroot=", dir, "/sysroot"),
               absl::StrCat("--exe=", dir, "/", name), "--format=json",
               "--max-frames=4096"},
              absl::Seconds(60));
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->exit_code, 0) << out->stderr_text;
  absl::StatusOr<UnwindOutput> ours = ParseUnwindJson(out->stdout_text);
  ASSERT_TRUE(ours.ok()) << ours.status() << "\n" << out->stdout_text;

  // Pair threads by frame-0 sp; the golden side is keyed by our tid.
  ThreadFrames expected;
  int unpaired = 0;
  for (const GoldenThread& g : *golden) {
    bool paired = false;
    for (const auto& [tid, thread] : ours->threads) {
      if (!thread.frames.empty() && thread.frames[0].sp == g.sp) {
        expected[tid] = g.pcs;
        paired = true;
      }
    }
    if (!paired) expected[-(++unpaired)] = g.pcs;
  }
  const ThreadFrames pcs = ours->Pcs();
  Comparison c = CompareThreadFrames("unwind", pcs, "gdb-multiarch",
                                     expected, &names);
  total_threads += c.threads;
  total_matched += c.matched;
  EXPECT_EQ(ours->threads.size(), golden->size());
  EXPECT_TRUE(c.ok()) << name << ": unwind differs from gdb-multiarch\n"
                      << c.diff << "unwind's view:\n"
                      << ours->Describe();
  std::cout << name << ": " << c.threads << " threads, " << c.matched
            << " matched\n";
}

INSTANTIATE_TEST_SUITE_P(Fixtures, AArch64CoreTest,
                         ::testing::ValuesIn(kFixtures),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                           return i.param;
                         });

}  // namespace
}  // namespace unwindd::harness
