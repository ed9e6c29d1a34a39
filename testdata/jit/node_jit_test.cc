// JIT code end to end, on node (V8) in its three tiers: a JavaScript
// recursion of known depth over a hot loop, recorded with `perf record -k 1
// --call-graph dwarf` while node writes its jitdump (--perf-prof, with
// unwinding information and interpreted frames on the native stack).
//
// The oracle is perf's own JIT pipeline: `perf inject --jit` (which turns
// the dump into jitted-PID-N.so files and MMAP2 records) and `perf script
// --no-inline` over its output. On every sample whose frame 0 is JIT code,
// `unwind perf --format=perf-script` on the original recording must print
// the frames perf prints: the same addresses in the same DSOs
// (jitted-PID-N.so, named by the code's index), and JIT frames named by
// the runtime's name for the code. The recursion must show in them at its
// full depth.
//
// One difference is allowed, by a named rule. perf's DWARF unwinder
// (libunwind in Debian's perf) sometimes reads a return address with no
// mapping behind it and stops there: `perf script -v` says "unwind: no map
// for 7" (argc, read as __libc_start_call_main's return address when the
// stack top falls one way). There perf's frames must be a proper prefix of
// ours, ours must reach the process root, and the number of such samples
// must not exceed perf's own count of those messages. eu-stack on a live
// node (live_node_test) confirms the frames past __libc_start_call_main.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"
#include "proc/perf/testing/recording.h"
#include "testdata/harness/subprocess.h"
#include "testdata/harness/tools.h"

namespace unwindd {
namespace {

using proc::perf::testing::Mode;

constexpr int kDepth = 30;  // rec's depth: kDepth + 1 rec frames over leaf

// work.js: rec(kDepth) -> ... -> rec(0) -> leaf, in a loop, for 2.5 s.
// node then exits by itself, which flushes its jitdump: a node killed
// while it runs leaves the last code it loaded in its stdio buffer, not in
// the file, and neither perf nor we can name that code (we still walk it
// by frame pointer).
constexpr char kWorkload[] = R"js(
function leaf(n) { let x = 0; for (let i = 0; i < n; i++) x = (x * 31 + i) | 0; return x; }
function rec(d, n) { return d === 0 ? leaf(n) : rec(d - 1, n) + 1; }
// 2.5 s of CPU, however busy the machine is (capped at 20 s of wall time),
// then exit, so that node flushes its jitdump.
let s = 0;
const t0 = process.cpuUsage(), wall = Date.now() + 20000;
for (let k = 1; ; k++) {
  s += rec(30, 4000);
  if ((k & 63) === 0 && (process.cpuUsage(t0).user >= 2.5e6 || Date.now() > wall)) break;
}
)js";

struct Tier {
  std::string name;
  std::vector<std::string> flags;
  // TurboFan inlines part of the recursion into itself: its samples show
  // fewer rec frames, and are checked for reaching the process's root.
  bool whole_recursion = true;
};

void PrintTo(const Tier& t, std::ostream* os) { *os << t.name; }

struct Frame {
  uint64_t address = 0;
  std::string symbol;
  std::string dso;  // basename
  bool operator==(const Frame& o) const { return address == o.address && dso == o.dso; }
};

struct Sample {
  std::string header;
  std::vector<Frame> frames;  // user frames (no [kernel.kallsyms])
};

std::string Basename(absl::string_view p) {
  const size_t slash = p.rfind('/');
  return std::string(slash == absl::string_view::npos ? p : p.substr(slash + 1));
}

// perf script's (and our perf-script format's) text: a header line, then
// "\t%16x SYMBOL (DSO)" lines, then a blank line.
std::vector<Sample> Parse(const std::string& text) {
  std::vector<Sample> out;
  Sample cur;
  bool in = false;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (line.empty()) {
      if (in) out.push_back(std::move(cur));
      cur = Sample{};
      in = false;
      continue;
    }
    if (line[0] != '\t') {
      cur.header = std::string(line);
      in = true;
      continue;
    }
    absl::string_view l = absl::StripAsciiWhitespace(line);
    const size_t sp = l.find(' ');
    const size_t paren = l.rfind(" (");
    if (sp == absl::string_view::npos || paren == absl::string_view::npos || paren < sp) continue;
    Frame f;
    if (!absl::SimpleHexAtoi(l.substr(0, sp), &f.address)) continue;
    f.symbol = std::string(l.substr(sp + 1, paren - sp - 1));
    f.dso = Basename(absl::StripSuffix(l.substr(paren + 2), ")"));
    if (f.dso == "[kernel.kallsyms]") continue;
    cur.frames.push_back(std::move(f));
  }
  if (in) out.push_back(std::move(cur));
  return out;
}

bool IsJit(const Frame& f) { return absl::StartsWith(f.dso, "jitted-"); }

class NodeJitTest : public ::testing::TestWithParam<Tier> {};

TEST_P(NodeJitTest, UnwindPerfMatchesPerfsJitPipeline) {
  const std::string reason = proc::perf::testing::CannotRecordReason();
  if (!reason.empty()) GTEST_SKIP() << reason;
  if (access("/usr/bin/node", X_OK) != 0) GTEST_SKIP() << "no node (nodejs)";
  const Tier& tier = GetParam();
  const std::string dir = ::testing::TempDir() + "/node_" + tier.name;
  ASSERT_EQ(system(("rm -rf '" + dir + "' && mkdir -p '" + dir + "'").c_str()), 0);
  std::ofstream(dir + "/work.js") << kWorkload;
  // node writes jit-PID.dump in its working directory.
  std::string node = "cd '" + dir + "' && exec node --perf-prof --perf-prof-unwinding-info "
                     "--interpreted-frames-native-stack";
  for (const std::string& f : tier.flags) absl::StrAppend(&node, " ", f);
  absl::StrAppend(&node, " work.js");
  absl::StatusOr<std::string> data = proc::perf::testing::RecordWithPerf(
      {"sh", "-c", node}, dir, tier.name, Mode::kFile, absl::Seconds(30),
      {"-k", "1", "-F", "2000", "--call-graph", "dwarf,16384"});
  ASSERT_TRUE(data.ok()) << data.status();

  // perf's JIT pipeline.
  const std::string injected = dir + "/injected.data";
  absl::StatusOr<harness::ToolOutput> inject = harness::RunTool(
      {"env", "HOME=" + dir, "perf", "inject", "--jit", "-i", *data, "-o", injected},
      absl::Seconds(300));
  ASSERT_TRUE(inject.ok()) << inject.status();
  ASSERT_EQ(inject->exit_code, 0) << inject->stderr_text;
  // One run of perf's script (its libunwind walk is the slow part of the
  // test): the samples on stdout, and on stderr (-v) how often perf's
  // unwinder stopped at an address nothing maps. perf script cuts a
  // callchain at kernel.perf_event_max_stack (127) entries unless told
  // otherwise; the recursion's are longer.
  absl::StatusOr<harness::ToolOutput> verbose = harness::RunTool(
      {"env", "HOME=" + dir, "perf", "script", "-v", "-i", injected, "--no-inline",
       "--max-stack", "4096"},
      absl::Seconds(600));
  ASSERT_TRUE(verbose.ok()) << verbose.status();
  ASSERT_EQ(verbose->exit_code, 0) << verbose->stderr_text.substr(0, 4000);
  const std::vector<Sample> theirs = Parse(verbose->stdout_text);
  int perf_lost = 0;
  for (absl::string_view line : absl::StrSplit(verbose->stderr_text, '\n')) {
    perf_lost += absl::StartsWith(line, "unwind: no map for ") ? 1 : 0;
  }

  absl::StatusOr<harness::ToolOutput> ours_run = harness::RunTool(
      {"env", "HOME=" + dir, harness::RunfilesRoot() + "/service/unwind", "perf", *data,
       "--format=perf-script"},
      absl::Seconds(300));
  ASSERT_TRUE(ours_run.ok()) << ours_run.status();
  ASSERT_EQ(ours_run->exit_code, 0) << ours_run->stderr_text;
  const std::vector<Sample> ours = Parse(ours_run->stdout_text);
  ASSERT_EQ(ours.size(), theirs.size());

  // The process's root: the outermost frame of most samples (node's _start).
  std::map<std::pair<uint64_t, std::string>, int> roots;
  for (const Sample& o : ours) {
    if (!o.frames.empty()) ++roots[{o.frames.back().address, o.frames.back().dso}];
  }
  std::pair<uint64_t, std::string> root;
  int root_count = 0;
  for (const auto& [frame, n] : roots) {
    if (n > root_count) root = frame, root_count = n;
  }

  int jit_leaf = 0, same = 0, deep = 0, rooted = 0, shown = 0, perf_cut = 0;
  for (size_t i = 0; i < theirs.size(); ++i) {
    const Sample& t = theirs[i];
    const Sample& o = ours[i];
    EXPECT_EQ(o.header, t.header) << "sample " << i;
    if (t.frames.empty() || !IsJit(t.frames[0])) continue;
    ++jit_leaf;
    // The named rule: perf stopped early; ours goes on to the root.
    const bool cut = t.frames.size() < o.frames.size() &&
                     std::equal(t.frames.begin(), t.frames.end(), o.frames.begin()) &&
                     o.frames.back().address == root.first &&
                     o.frames.back().dso == root.second;
    if (o.frames == t.frames || cut) {
      ++(cut ? perf_cut : same);
      int rec = 0;
      for (const Frame& f : o.frames) rec += absl::StrContains(f.symbol, "rec ") ? 1 : 0;
      deep += rec >= kDepth + 1;
      rooted += rec > 0 && o.frames.back().address == root.first &&
                o.frames.back().dso == root.second;
      // JIT frames carry the runtime's name for the code, as perf's do.
      for (size_t k = 0; k < t.frames.size(); ++k) {
        if (IsJit(o.frames[k])) {
          EXPECT_EQ(o.frames[k].symbol, t.frames[k].symbol) << i;
        }
      }
      continue;
    }
    if (shown++ < 5) {
      std::string diff;
      for (size_t k = 0; k < std::max(o.frames.size(), t.frames.size()); ++k) {
        auto show = [](const std::vector<Frame>& v, size_t k) {
          return k < v.size() ? absl::StrCat(absl::Hex(v[k].address), " ", v[k].symbol, " (",
                                             v[k].dso, ")")
                              : std::string("-");
        };
        absl::StrAppend(&diff, "  ", show(t.frames, k), "  |  ", show(o.frames, k), "\n");
      }
      ADD_FAILURE() << tier.name << " sample " << i << " " << t.header << "\nperf | ours:\n"
                    << diff;
    }
  }
  std::printf("%s: %zu samples, %d JIT-leaf, %d the same as perf's JIT pipeline, %d with "
              "the whole recursion, %d through rec to the root; %d where perf stopped at an "
              "unmapped return address (%d times in perf -v) and ours goes on to the root\n",
              tier.name.c_str(), theirs.size(), jit_leaf, same, deep, rooted, perf_cut,
              perf_lost);
  EXPECT_GT(jit_leaf, 50);
  EXPECT_EQ(same + perf_cut, jit_leaf);
  EXPECT_LE(perf_cut, perf_lost);
  if (tier.whole_recursion) {
    EXPECT_GT(deep, jit_leaf * 8 / 10);
  } else {
    EXPECT_GT(rooted, jit_leaf * 8 / 10);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Tiers, NodeJitTest,
    ::testing::Values(Tier{"interpreter", {"--no-opt", "--no-sparkplug"}},
                      Tier{"sparkplug", {"--no-opt", "--always-sparkplug"}},
                      Tier{"turbofan", {}, /*whole_recursion=*/false}),
    [](const ::testing::TestParamInfo<Tier>& info) { return info.param.name; });

}  // namespace
}  // namespace unwindd
