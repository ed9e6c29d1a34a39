// The reader against perf itself, on real recordings made at test time:
// `perf record -e cpu-clock --call-graph dwarf` of fixture programs, in
// file and pipe mode. What we read must be what `perf script` prints for
// the same file, record for record and in the same order: every sample
// (pid, tid, time, ip, period) and every MMAP/MMAP2/COMM/FORK/EXIT event
// (--show-mmap-events --show-task-events), and the build-ids perf
// buildid-list prints.
#include <fcntl.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"
#include "memory/scoped_fd.h"
#include "proc/perf/perf_data.h"
#include "proc/perf/process_maps.h"
#include "proc/perf/testing/recording.h"
#include "testdata/harness/subprocess.h"
#include "testdata/harness/tools.h"

namespace unwindd::proc::perf {
namespace {

using testing::Mode;

// Runs of blanks become one space; leading/trailing ones go.
std::string Squeeze(absl::string_view line) {
  std::string out;
  bool blank = false;
  for (char c : absl::StripAsciiWhitespace(line)) {
    if (c == ' ' || c == '\t') {
      blank = true;
      continue;
    }
    if (blank && !out.empty()) out += ' ';
    blank = false;
    out += c;
  }
  return out;
}

std::string Time(uint64_t ns) {
  return absl::StrFormat("%d.%06d", ns / 1000000000, (ns % 1000000000) / 1000);
}

char ProtChar(uint32_t prot, uint32_t bit, char c) { return (prot & bit) ? c : '-'; }

// Our records printed the way perf script prints them (builtin-script.c
// and util/event.c perf_event__fprintf_*), before Squeeze.
class Printer : public EventHandler {
 public:
  absl::Status OnEvent(const Event& e) override {
    const std::string prefix =
        absl::StrFormat("%d/%d %s: ", static_cast<int32_t>(e.id.pid),
                        static_cast<int32_t>(e.id.tid), Time(e.id.time));
    switch (e.type) {
      case kRecordSample:
        lines.push_back(Squeeze(absl::StrFormat("%d/%d %s: %d %x", e.sample.pid,
                                                e.sample.tid, Time(e.sample.time),
                                                e.sample.period, e.sample.ip)));
        ++samples;
        break;
      case kRecordMmap2: {
        const MmapEvent& m = e.mmap;
        std::string ids =
            m.build_id.empty()
                ? absl::StrFormat("%02x:%02x %d %d", m.maj, m.min, m.ino, m.ino_generation)
                : absl::StrCat("<", HexString(m.build_id.span()), ">");
        lines.push_back(Squeeze(absl::StrFormat(
            "%sPERF_RECORD_MMAP2 %d/%d: [%#x(%#x) @ %#x %s]: %c%c%c%c %s", prefix,
            static_cast<int32_t>(m.pid), static_cast<int32_t>(m.tid), m.start, m.len,
            m.pgoff, ids, ProtChar(m.prot, kProtRead, 'r'), ProtChar(m.prot, kProtWrite, 'w'),
            ProtChar(m.prot, kProtExec, 'x'), (m.flags & kMapShared) ? 's' : 'p',
            m.filename)));
        break;
      }
      case kRecordMmap: {
        const MmapEvent& m = e.mmap;
        lines.push_back(Squeeze(absl::StrFormat(
            "%sPERF_RECORD_MMAP %d/%d: [%#x(%#x) @ %#x]: %c %s", prefix,
            static_cast<int32_t>(m.pid), static_cast<int32_t>(m.tid), m.start, m.len,
            m.pgoff, (m.prot & kProtExec) ? 'x' : 'r', m.filename)));
        break;
      }
      case kRecordComm:
        lines.push_back(Squeeze(absl::StrFormat(
            "%sPERF_RECORD_COMM%s: %s:%d/%d", prefix, e.comm.exec ? " exec" : "",
            e.comm.comm, static_cast<int32_t>(e.comm.pid), static_cast<int32_t>(e.comm.tid))));
        break;
      case kRecordFork:
      case kRecordExit:
        lines.push_back(Squeeze(absl::StrFormat(
            "%sPERF_RECORD_%s(%d:%d):(%d:%d)", prefix,
            e.type == kRecordFork ? "FORK" : "EXIT", e.task.pid, e.task.tid,
            e.task.ppid, e.task.ptid)));
        break;
      default:
        break;
    }
    if (e.type == kRecordMmap2 && !e.mmap.build_id.empty()) {
      mmap_build_ids[std::string(e.mmap.filename)] = HexString(e.mmap.build_id.span());
    }
    maps.Apply(e);
    return absl::OkStatus();
  }
  std::vector<std::string> lines;
  std::map<std::string, std::string> mmap_build_ids;  // file -> MMAP2's id
  int samples = 0;
  ProcessMaps maps;
};

std::vector<std::string> PerfLines(const std::string& text) {
  std::vector<std::string> out;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    std::string s = Squeeze(line);
    if (!s.empty()) out.push_back(s);
  }
  return out;
}

struct Case {
  std::string fixture;  // under testdata/
  Mode mode;
  std::vector<std::string> extra = {};  // perf record options
  std::string tag = "";                 // for the test name
};

class PerfRecordTest : public ::testing::TestWithParam<Case> {};

TEST_P(PerfRecordTest, ReadsWhatPerfScriptPrints) {
  const std::string reason = testing::CannotRecordReason();
  if (!reason.empty()) GTEST_SKIP() << reason;
  const Case& c = GetParam();
  const std::string dir = ::testing::TempDir();
  std::string name = c.fixture;
  std::replace(name.begin(), name.end(), '/', '_');
  absl::StatusOr<std::string> data = testing::RecordWithPerf(
      {harness::FixturePath(c.fixture)}, dir,
      absl::StrCat(name, c.mode == Mode::kPipe ? "_pipe" : "_file", c.tag), c.mode,
      absl::Seconds(1), c.extra);
  ASSERT_TRUE(data.ok()) << data.status();
  absl::StatusOr<std::string> text = testing::PerfScript(
      *data, {"-F", "pid,tid,time,ip,period", "--hide-call-graph",
              "--show-mmap-events", "--show-task-events"});
  ASSERT_TRUE(text.ok()) << text.status();
  const std::vector<std::string> theirs = PerfLines(*text);

  absl::StatusOr<std::unique_ptr<PerfDataReader>> r = PerfDataReader::OpenFile(*data);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)->pipe_mode(), c.mode == Mode::kPipe);
  Printer ours;
  ASSERT_TRUE((*r)->Read(ours).ok());
  for (const std::string& w : (*r)->warnings().kept()) ADD_FAILURE() << w;
  EXPECT_GT(ours.samples, 0);
  ASSERT_EQ(ours.lines.size(), theirs.size());
  for (size_t i = 0; i < theirs.size(); ++i) {
    ASSERT_EQ(ours.lines[i], theirs[i]) << "line " << i;
  }
  // The recording's process ends up with mappings, among them its binary.
  EXPECT_GT(ours.maps.processes(), 0u);

  {
    // Read with pread instead of a mapping: the same records.
    absl::StatusOr<std::unique_ptr<PerfDataReader>> pr =
        PerfDataReader::OpenFile(*data, {}, FileAccess::kRead);
    ASSERT_TRUE(pr.ok()) << pr.status();
    Printer read;
    ASSERT_TRUE((*pr)->Read(read).ok());
    EXPECT_EQ(read.lines, ours.lines);
  }
  if (c.mode == Mode::kPipe) {
    // The same bytes through a descriptor, read once, front to back.
    memory::ScopedFd fd = memory::OpenCloexec(data->c_str(), O_RDONLY);
    absl::StatusOr<std::unique_ptr<PerfDataReader>> s =
        PerfDataReader::OpenStream(std::move(fd));
    ASSERT_TRUE(s.ok()) << s.status();
    Printer streamed;
    ASSERT_TRUE((*s)->Read(streamed).ok());
    EXPECT_EQ(streamed.lines, ours.lines);
  } else {
    // Build-ids: the HEADER_BUILD_ID feature, as perf buildid-list prints it.
    absl::StatusOr<harness::ToolOutput> ids =
        harness::RunTool({"perf", "buildid-list", "-i", *data}, absl::Seconds(60));
    ASSERT_TRUE(ids.ok());
    std::set<std::string> want;
    for (absl::string_view line : absl::StrSplit(ids->stdout_text, '\n', absl::SkipEmpty())) {
      want.insert(Squeeze(line));
    }
    EXPECT_FALSE(want.empty());
    if (c.extra.empty()) {
      std::set<std::string> got;
      for (const BuildIdEntry& e : (*r)->info().build_ids) {
        got.insert(absl::StrCat(e.build_id, " ", e.filename));
      }
      EXPECT_EQ(got, want);
    } else {
      // --buildid-mmap: no HEADER_BUILD_ID; perf buildid-list then lists
      // the files with samples, with the build-id their MMAP2 carried
      // (and its own vDSO copy without one, a line we skip).
      EXPECT_TRUE((*r)->info().build_ids.empty());
      int checked = 0;
      for (const std::string& line : want) {
        std::vector<std::string> f = absl::StrSplit(line, ' ');
        if (f.size() != 2 || f[1].empty() || f[1][0] != '/') continue;
        EXPECT_EQ(ours.mmap_build_ids[f[1]], f[0]) << f[1];
        ++checked;
      }
      EXPECT_GE(checked, 2);  // the fixture and libc at least
    }
    EXPECT_EQ((*r)->info().arch, "x86_64");
    EXPECT_FALSE((*r)->info().cmdline.empty());
    EXPECT_EQ((*r)->attrs().at(0).name, "cpu-clock");
  }
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, PerfRecordTest,
    ::testing::Values(Case{"perf/perf_busy_O2_nofp_pie", Mode::kFile},
                      Case{"perf/perf_busy_O2_nofp_pie", Mode::kPipe},
                      Case{"threads_c_O2_nofp_pie", Mode::kFile},
                      Case{"threads_c_O2_nofp_pie", Mode::kPipe},
                      Case{"recursion_O2_nofp_pie", Mode::kFile},
                      // MMAP2 records carrying build-ids instead of inodes.
                      Case{"perf/perf_busy_O2_nofp_pie", Mode::kFile,
                           {"--buildid-mmap"}, "_buildid_mmap"}),
    [](const ::testing::TestParamInfo<Case>& info) {
      std::string n = info.param.fixture;
      std::replace(n.begin(), n.end(), '/', '_');
      return absl::StrCat(n, info.param.mode == Mode::kPipe ? "_pipe" : "_file",
                          info.param.tag);
    });

}  // namespace
}  // namespace unwindd::proc::perf
