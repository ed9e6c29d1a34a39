// A running node (V8), unwound live: `unwind pid` on a node parked in
// Atomics.wait under a JavaScript recursion of known depth must give every
// thread the frames eu-stack gives (elfutils walks V8's frames by its
// x86_64 frame-pointer fallback), the main thread through all the
// recursion's frames to node::Start; and `unwind profile` of a node busy
// under the same recursion must show the whole recursion over node::Start
// in most of its samples.
// Interpreter and Sparkplug tiers (--always-sparkplug).
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "testdata/harness/frames.h"
#include "testdata/harness/subprocess.h"
#include "testdata/harness/tools.h"

namespace unwindd {
namespace {

constexpr int kDepth = 30;

// Parks the main thread in a futex wait under rec(kDepth).
constexpr char kParked[] = R"(const sab = new Int32Array(new SharedArrayBuffer(4));
function rec(d) { return d === 0 ? park() : rec(d - 1) + 1; }
function park() { console.log("ready"); for (;;) Atomics.wait(sab, 0, 0); }
rec(30);
)";

// Spins in leaf() under rec(kDepth).
constexpr char kBusy[] = R"(function leaf(n) { let s = 0; for (let i = 0; i < 1e6; i++) s += i * n; return s; }
function rec(d) { return d === 0 ? loop() : rec(d - 1) + 1; }
function loop() { console.log("ready"); for (;;) leaf(3); }
rec(30);
)";

struct Tier {
  std::string name;
  std::string flags;
};

class LiveNodeTest : public ::testing::TestWithParam<Tier> {
 protected:
  // A script that runs node on `js` in its own directory (where node
  // writes jit-PID.dump), for StartProgram.
  std::string Launcher(const std::string& name, const char* js) {
    const std::string dir = ::testing::TempDir() + "/live_node_" + GetParam().name + "_" + name;
    EXPECT_EQ(system(("rm -rf '" + dir + "' && mkdir -p '" + dir + "'").c_str()), 0);
    std::ofstream(dir + "/work.js") << js;
    const std::string sh = dir + "/run.sh";
    std::ofstream(sh) << "#!/bin/sh\ncd '" << dir
                      << "' && exec node --perf-prof --interpreted-frames-native-stack "
                      << GetParam().flags << " work.js\n";
    chmod(sh.c_str(), 0755);
    return sh;
  }
};

TEST_P(LiveNodeTest, UnwindPidMatchesEuStackThroughTheRecursion) {
  if (access("/usr/bin/node", X_OK) != 0) GTEST_SKIP() << "no node (nodejs)";
  absl::StatusOr<harness::RunningProgram> p =
      harness::StartProgram(Launcher("parked", kParked), absl::Seconds(60));
  ASSERT_TRUE(p.ok()) << p.status();
  harness::SymbolNames names;
  absl::StatusOr<harness::ThreadFrames> eu = harness::EuStackFrames(p->pid(), &names);
  ASSERT_TRUE(eu.ok()) << eu.status();
  absl::StatusOr<harness::UnwindOutput> ours =
      harness::UnwindFrames(harness::RunfilesRoot() + "/service/unwind", p->pid());
  ASSERT_TRUE(ours.ok()) << ours.status();
  const harness::Comparison c =
      harness::CompareThreadFrames("eu-stack", *eu, "unwind", ours->Pcs(), &names);
  EXPECT_TRUE(c.ok()) << c.diff;

  // The main thread: the recursion (one return address, kDepth + 1 times
  // with rec(0)'s call of park) and node::Start under it.
  const std::vector<uint64_t>& main = ours->Pcs()[p->pid()];
  std::map<uint64_t, int> repeats;
  for (uint64_t pc : main) ++repeats[pc];
  int most = 0;
  for (const auto& [pc, n] : repeats) most = std::max(most, n);
  EXPECT_GE(most, kDepth) << ours->Describe();
  bool start = false;
  for (uint64_t pc : main) {
    auto it = names.find(pc);
    start |= it != names.end() && absl::StartsWith(it->second, "node::Start(");
  }
  EXPECT_TRUE(start) << "no node::Start frame\n" << ours->Describe();
}

TEST_P(LiveNodeTest, UnwindProfileShowsTheRecursionToNodeStart) {
  if (access("/usr/bin/node", X_OK) != 0) GTEST_SKIP() << "no node (nodejs)";
  if (access("/proc/sys/kernel/perf_event_paranoid", R_OK) != 0) GTEST_SKIP() << "no perf";
  absl::StatusOr<harness::RunningProgram> p = harness::StartProgram(
      Launcher("busy", kBusy), absl::Seconds(60), harness::Settle::kNo);
  ASSERT_TRUE(p.ok()) << p.status();
  // node::Start's module-relative return address, from eu-stack's names
  // and our frames of the same moment.
  harness::SymbolNames names;
  absl::StatusOr<harness::ThreadFrames> eu = harness::EuStackFrames(p->pid(), &names);
  ASSERT_TRUE(eu.ok()) << eu.status();
  absl::StatusOr<harness::UnwindOutput> now =
      harness::UnwindFrames(harness::RunfilesRoot() + "/service/unwind", p->pid());
  ASSERT_TRUE(now.ok()) << now.status();
  // "node+0x..." as folded prints it; in the module node::Start is in,
  // which is node itself (node 20) or libnode.so.108 (Debian 12's node 18).
  std::vector<std::string> start_frames;
  for (const harness::UnwindFrame& f : now->threads[p->pid()].frames) {
    auto it = names.find(f.pc);
    uint64_t rel = 0;
    if (it != names.end() && absl::StartsWith(it->second, "node::Start(") &&
        absl::SimpleHexAtoi(f.rel_pc, &rel)) {
      const std::string module = f.module.substr(f.module.rfind('/') + 1);
      start_frames.push_back(absl::StrFormat("%s+0x%x", module, rel));
      start_frames.push_back(absl::StrFormat("%s+0x%x", module, rel - 1));
    }
  }
  ASSERT_FALSE(start_frames.empty()) << now->Describe();

  const std::string out = ::testing::TempDir() + "/live_node_" + GetParam().name + ".folded";
  absl::StatusOr<harness::ToolOutput> prof = harness::RunTool(
      {harness::RunfilesRoot() + "/service/unwind", "profile", absl::StrCat("--pid=", p->pid()),
       "--duration=3", "--format=folded", "-o", out},
      absl::Seconds(120));
  ASSERT_TRUE(prof.ok()) << prof.status();
  ASSERT_EQ(prof->exit_code, 0) << prof->stderr_text;
  std::ifstream in(out);
  // The recursion shows as one frame (rec's call of itself) repeated:
  // counted by the frame's text, whatever the runtime names it (node 20's
  // "JS:~rec ...", node 18's "LazyCompile:~rec ...", or an address where
  // the dump has not reached the disk yet). Samples with a repeated frame
  // are the main thread's in the recursion; each must hold it kDepth
  // times over node::Start.
  int samples = 0, whole = 0;
  std::string line;
  while (std::getline(in, line)) {
    const size_t space = line.rfind(' ');
    int count = 0;
    if (space == std::string::npos || !absl::SimpleAtoi(line.substr(space + 1), &count)) continue;
    std::map<std::string, int> repeats;
    int most = 0;
    bool start = false;
    for (absl::string_view f : absl::StrSplit(line.substr(0, space), ';')) {
      most = std::max(most, ++repeats[std::string(f)]);
      for (const std::string& s : start_frames) start |= f == s;
    }
    if (most < 2) continue;  // another thread, or the kernel's side
    samples += count;
    if (most >= kDepth && start) whole += count;
  }
  EXPECT_GT(samples, 10) << prof->stderr_text;
  EXPECT_GE(whole, samples * 8 / 10) << "of " << samples << " samples in rec";
}

INSTANTIATE_TEST_SUITE_P(Tiers, LiveNodeTest,
                         ::testing::Values(Tier{"interpreter", ""},
                                           Tier{"sparkplug", "--always-sparkplug"}),
                         [](const ::testing::TestParamInfo<Tier>& i) { return i.param.name; });

}  // namespace
}  // namespace unwindd
