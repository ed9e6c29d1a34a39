// `unwind perf`'s four formats carry the same samples. On one real
// recording (perf record --call-graph dwarf of perf_busy), the CLI's
// perf-script output — which perf_unwind_test holds to `perf script` — is
// the reference, and:
//   pprof   read back by a consumer nobody here wrote, `go tool pprof -raw`:
//           the same stacks (each location at the address perf script
//           prints, once its mapping's start and offset are applied), with
//           the same counts per thread;
//   json    one sample per perf-script sample, same tids and frame counts;
//   folded  one count per sample in all.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"
#include "proc/perf/testing/recording.h"
#include "testdata/harness/json.h"
#include "testdata/harness/subprocess.h"
#include "testdata/harness/tools.h"

namespace unwindd {
namespace {

using harness::RunTool;
using harness::ToolOutput;

std::string UnwindBinary() { return harness::RunfilesRoot() + "/service/unwind"; }

// (tid, frames: kernel then user, as perf script prints their addresses)
using Stack = std::pair<int64_t, std::vector<uint64_t>>;

// perf-script text: "comm tid time: period event: \n" then "\tADDR SYM (DSO)".
std::vector<Stack> ParseScript(const std::string& text) {
  std::vector<Stack> out;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (line.empty()) continue;
    if (line[0] != '\t') {
      std::vector<absl::string_view> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
      int64_t tid = 0;
      // comm may hold spaces: the tid is the field before the time (".:")
      for (size_t i = 1; i + 1 < f.size(); ++i) {
        if (absl::EndsWith(f[i + 1], ":") && absl::StrContains(f[i + 1], ".")) {
          absl::SimpleAtoi(f[i], &tid);
          break;
        }
      }
      out.push_back({tid, {}});
      continue;
    }
    uint64_t addr = 0;
    absl::string_view rest = absl::StripLeadingAsciiWhitespace(line);
    if (!out.empty() && absl::SimpleHexAtoi(rest.substr(0, rest.find(' ')), &addr)) {
      out.back().second.push_back(addr);
    }
  }
  return out;
}

// `go tool pprof -raw PB`, offline, its caches under `dir`.
absl::StatusOr<ToolOutput> GoPprofRaw(const std::string& dir, const std::string& pb) {
  return RunTool({"env", absl::StrCat("HOME=", dir), absl::StrCat("PPROF_TMPDIR=", dir),
                  absl::StrCat("GOCACHE=", dir, "/gocache"), "GOTOOLCHAIN=local", "GOFLAGS=",
                  "GOPROXY=off", "go", "tool", "pprof", "-raw", "-symbolize=none", pb},
                 absl::Seconds(120));
}

// go tool pprof -raw: the samples (count, location ids, tid label), the
// locations (id -> address, mapping) and mappings (id -> start, offset).
std::map<Stack, int64_t> ParsePprofRaw(const std::string& text) {
  enum { kNone, kSamples, kLocations, kMappings } section = kNone;
  struct RawSample {
    int64_t count = 0;
    std::vector<int> locations;
    int64_t tid = 0;
  };
  std::vector<RawSample> samples;
  std::map<int, std::pair<uint64_t, int>> locations;       // id -> (address, mapping)
  std::map<int, std::pair<uint64_t, uint64_t>> mappings;   // id -> (start, offset)
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (line == "Samples:") section = kSamples;
    if (line == "Locations") section = kLocations;
    if (line == "Mappings") section = kMappings;
    absl::string_view t = absl::StripAsciiWhitespace(line);
    if (section == kSamples) {
      if (const size_t colon = t.find(": "); colon != absl::string_view::npos &&
                                              !absl::StartsWith(t, "pid:") &&
                                              !absl::StartsWith(t, "comm:")) {
        std::vector<absl::string_view> head = absl::StrSplit(t.substr(0, colon), ' ', absl::SkipEmpty());
        RawSample s;
        if (head.empty() || !absl::SimpleAtoi(head[0], &s.count)) continue;
        for (absl::string_view id : absl::StrSplit(t.substr(colon + 2), ' ', absl::SkipEmpty())) {
          int v;
          if (absl::SimpleAtoi(id, &v)) s.locations.push_back(v);
        }
        samples.push_back(std::move(s));
      } else if (const size_t at = t.find("tid:["); at != absl::string_view::npos && !samples.empty()) {
        absl::string_view v = t.substr(at + 5);
        absl::SimpleAtoi(v.substr(0, v.find(']')), &samples.back().tid);
      }
    } else if (section == kLocations) {
      // "    12: 0x55edfc0c6d3f M=1 "
      std::vector<absl::string_view> f = absl::StrSplit(t, ' ', absl::SkipEmpty());
      int id = 0, m = 0;
      uint64_t addr = 0;
      if (f.size() >= 2 && absl::ConsumeSuffix(&f[0], ":") && absl::SimpleAtoi(f[0], &id) &&
          absl::ConsumePrefix(&f[1], "0x") && absl::SimpleHexAtoi(f[1], &addr)) {
        if (f.size() >= 3 && absl::ConsumePrefix(&f[2], "M=")) absl::SimpleAtoi(f[2], &m);
        locations[id] = {addr, m};
      }
    } else if (section == kMappings) {
      // "1: 0x55edfc0c6000/0x55edfc0c8000/0x0 /path buildid"
      std::vector<absl::string_view> f = absl::StrSplit(t, ' ', absl::SkipEmpty());
      int id = 0;
      if (f.size() >= 2 && absl::ConsumeSuffix(&f[0], ":") && absl::SimpleAtoi(f[0], &id)) {
        std::vector<absl::string_view> r = absl::StrSplit(f[1], '/');
        uint64_t start = 0, offset = 0;
        if (r.size() == 3 && absl::ConsumePrefix(&r[0], "0x") && absl::SimpleHexAtoi(r[0], &start) &&
            absl::ConsumePrefix(&r[2], "0x") && absl::SimpleHexAtoi(r[2], &offset)) {
          mappings[id] = {start, offset};
        }
      }
    }
  }
  std::map<Stack, int64_t> out;
  for (const RawSample& s : samples) {
    Stack stack{s.tid, {}};
    for (int id : s.locations) {
      auto [addr, m] = locations[id];
      auto mapping = mappings.find(m);
      // Kernel addresses and those in no file are printed as they are.
      const bool kernel = addr >= 0xffff800000000000ULL;
      stack.second.push_back(mapping == mappings.end() || kernel
                                 ? addr
                                 : addr - mapping->second.first + mapping->second.second);
    }
    out[stack] += s.count;
  }
  return out;
}

class UnwindPerfFormatsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string reason = proc::perf::testing::CannotRecordReason();
    if (!reason.empty()) GTEST_SKIP() << reason;
    dir_ = ::testing::TempDir();
    absl::StatusOr<std::string> data = proc::perf::testing::RecordWithPerf(
        {harness::FixturePath("perf/perf_busy_O2_nofp_pie")}, dir_, "formats",
        proc::perf::testing::Mode::kFile, absl::Seconds(1));
    ASSERT_TRUE(data.ok()) << data.status();
    data_ = *data;
  }

  // `unwind perf` with `args`, stdout.
  std::string Run(std::vector<std::string> args) {
    std::vector<std::string> argv = {"env", absl::StrCat("HOME=", dir_), UnwindBinary(),
                                     "perf", data_};
    argv.insert(argv.end(), args.begin(), args.end());
    absl::StatusOr<ToolOutput> out = RunTool(argv, absl::Seconds(120));
    EXPECT_TRUE(out.ok()) << out.status();
    if (!out.ok()) return "";
    EXPECT_EQ(out->exit_code, 0) << out->stderr_text;
    return out->stdout_text;
  }

  std::string dir_, data_;
};

TEST_F(UnwindPerfFormatsTest, EveryFormatCarriesTheSameSamples) {
  const std::vector<Stack> script = ParseScript(Run({"--format=perf-script"}));
  ASSERT_GT(script.size(), 100u);
  std::map<Stack, int64_t> want;
  for (const Stack& s : script) ++want[s];

  // pprof, read by go tool pprof.
  const std::string pb = dir_ + "/formats.pb.gz";
  Run({"--format=pprof", "-o", pb});
  absl::StatusOr<ToolOutput> raw = GoPprofRaw(dir_, pb);
  if (!raw.ok() && absl::IsNotFound(raw.status())) GTEST_SKIP() << "no `go` (golang-go)";
  ASSERT_TRUE(raw.ok()) << raw.status();
  ASSERT_EQ(raw->exit_code, 0) << raw->stderr_text;
  const std::map<Stack, int64_t> got = ParsePprofRaw(raw->stdout_text);
  EXPECT_EQ(got.size(), want.size());
  int64_t total = 0;
  for (const auto& [stack, count] : want) {
    auto it = got.find(stack);
    EXPECT_TRUE(it != got.end() && it->second == count)
        << "tid " << stack.first << ", " << stack.second.size() << " frames: perf-script "
        << count << ", pprof " << (it == got.end() ? 0 : it->second);
    total += count;
  }
  EXPECT_EQ(total, static_cast<int64_t>(script.size()));

  // json: the same samples, in the same order.
  absl::StatusOr<harness::JsonValue> doc = harness::ParseJson(Run({"--format=json"}));
  ASSERT_TRUE(doc.ok()) << doc.status();
  const harness::JsonValue* samples = doc->Find("samples");
  ASSERT_NE(samples, nullptr);
  ASSERT_EQ(samples->elements().size(), script.size());
  for (size_t i = 0; i < script.size(); ++i) {
    const harness::JsonValue& s = samples->elements()[i];
    EXPECT_EQ(s.Find("tid")->AsInt64().value_or(-1), script[i].first) << i;
    const size_t frames = s.Find("frames")->elements().size() + s.Find("kernel")->elements().size();
    EXPECT_EQ(frames, script[i].second.size()) << "sample " << i;
  }

  // folded: every sample counted once.
  int64_t folded_total = 0;
  for (absl::string_view line : absl::StrSplit(Run({"--format=folded"}), '\n', absl::SkipEmpty())) {
    int64_t n = 0;
    ASSERT_TRUE(absl::SimpleAtoi(line.substr(line.rfind(' ') + 1), &n)) << line;
    folded_total += n;
  }
  EXPECT_EQ(folded_total, static_cast<int64_t>(script.size()));
}

// A recording of two events (perf record -e cpu-clock -e page-faults):
// the pprof has a value column per event, and go tool pprof sums each to
// what perf script's periods of that event sum to.
TEST(UnwindPerfEventsTest, EachEventWeighsInItsOwnColumn) {
  const std::string reason = proc::perf::testing::CannotRecordReason();
  if (!reason.empty()) GTEST_SKIP() << reason;
  const std::string dir = ::testing::TempDir();
  absl::StatusOr<std::string> data = proc::perf::testing::RecordWithPerf(
      {harness::FixturePath("perf/perf_busy_O2_nofp_pie")}, dir, "events",
      proc::perf::testing::Mode::kFile, absl::Seconds(1), {"-e", "page-faults"});
  ASSERT_TRUE(data.ok()) << data.status();
  absl::StatusOr<std::string> script =
      proc::perf::testing::PerfScript(*data, {"-F", "period,event"});
  ASSERT_TRUE(script.ok()) << script.status();
  std::map<std::string, int64_t> want;  // event -> sum of periods
  for (absl::string_view line : absl::StrSplit(*script, '\n', absl::SkipEmpty())) {
    std::vector<absl::string_view> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
    int64_t period = 0;
    if (f.size() == 2 && absl::SimpleAtoi(f[0], &period)) {
      want[std::string(absl::StripSuffix(f[1], ":"))] += period;
    }
  }
  ASSERT_EQ(want.size(), 2u) << *script;
  const std::string pb = dir + "/events.pb.gz";
  absl::StatusOr<ToolOutput> ours = RunTool(
      {"env", absl::StrCat("HOME=", dir), UnwindBinary(), "perf", *data, "--format=pprof", "-o",
       pb},
      absl::Seconds(120));
  ASSERT_TRUE(ours.ok()) << ours.status();
  ASSERT_EQ(ours->exit_code, 0) << ours->stderr_text;
  absl::StatusOr<ToolOutput> raw = GoPprofRaw(dir, pb);
  if (!raw.ok() && absl::IsNotFound(raw.status())) GTEST_SKIP() << "no `go` (golang-go)";
  ASSERT_TRUE(raw.ok()) << raw.status();
  ASSERT_EQ(raw->exit_code, 0) << raw->stderr_text;
  // "samples/count page-faults/count[dflt] cpu/nanoseconds", then one line
  // of values per sample, "N N N: location ids".
  std::vector<std::string> columns;
  std::vector<int64_t> sums;
  bool in_samples = false;
  for (absl::string_view line : absl::StrSplit(raw->stdout_text, '\n')) {
    if (line == "Samples:") {
      in_samples = true;
      continue;
    }
    if (line == "Locations") break;
    if (!in_samples) continue;
    if (columns.empty()) {
      for (absl::string_view c : absl::StrSplit(line, ' ', absl::SkipEmpty())) {
        absl::ConsumeSuffix(&c, "[dflt]");
        columns.emplace_back(c);
      }
      sums.assign(columns.size(), 0);
      continue;
    }
    const size_t colon = line.find(':');
    if (colon == absl::string_view::npos || line.substr(0, colon).find_first_not_of(" 0123456789") !=
                                                absl::string_view::npos) {
      continue;
    }
    std::vector<absl::string_view> v = absl::StrSplit(line.substr(0, colon), ' ', absl::SkipEmpty());
    ASSERT_EQ(v.size(), columns.size()) << line;
    for (size_t i = 0; i < v.size(); ++i) {
      int64_t n = 0;
      ASSERT_TRUE(absl::SimpleAtoi(v[i], &n)) << line;
      sums[i] += n;
    }
  }
  // The columns in the order the events' first samples came.
  ASSERT_EQ(columns.size(), 3u) << raw->stdout_text.substr(0, 300);
  EXPECT_EQ(columns[0], "samples/count");
  std::map<std::string, int64_t> got;
  for (size_t i = 1; i < columns.size(); ++i) got[columns[i]] = sums[i];
  EXPECT_EQ(got, (std::map<std::string, int64_t>{{"cpu/nanoseconds", want["cpu-clock"]},
                                                 {"page-faults/count", want["page-faults"]}}));
}

}  // namespace
}  // namespace unwindd
