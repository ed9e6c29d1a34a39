// End to end (issue 13): record a CPU-bound fixture with `perf record
// --call-graph dwarf`, unwind every sample in-process through
// proc::perf's snapshot target and unwinder::UnwindTarget, and compare
// each sample with `perf script --no-inline`: the header line, and the
// user frames, mapped the way perf prints them
// (service/cli/perf_script/perf_script.h states the rule).
//
// Differences are counted by cause and printed; any sample no named cause
// explains fails the test. The named causes:
//   epilogue_saved_register_below_sp   TODO(issue 13): ours, being fixed
//   frame0_after_rt_sigreturn_syscall  TODO(issue 13): ours, reported
//   perf_refuses_last_word_of_stack_copy  perf's (source quoted below)
// The kernel part of each callchain must equal perf's in every sample.
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"
#include "proc/perf/perf_data.h"
#include "proc/perf/perf_snapshot.h"
#include "proc/perf/process_maps.h"
#include "proc/perf/testing/recording.h"
#include "service/cli/perf_script/perf_script.h"
#include "testdata/harness/tools.h"
#include "unwinder/unwinder.h"

namespace unwindd {
namespace {

using proc::perf::testing::Mode;

struct Frame {
  uint64_t address = 0;
  std::string dso;
  bool operator==(const Frame& o) const {
    return address == o.address && dso == o.dso;
  }
};

std::string Describe(const std::vector<Frame>& frames) {
  std::string out;
  for (const Frame& f : frames) absl::StrAppendFormat(&out, "  %x (%s)\n", f.address, f.dso);
  return out;
}

struct ScriptSample {
  std::string header;  // with its "\n"
  std::vector<Frame> user;
  std::vector<uint64_t> kernel;  // PERF_SAMPLE_CALLCHAIN's kernel part
  // perf printed a last frame ffffffffffffffff: its unwinder got a return
  // address of 0 (a failed read) and "decremented" it.
  bool minus_one_tail = false;
};

// perf script's kernel frames: [kernel.kallsyms] and modules, at kernel
// addresses (the top half of the address space on x86_64 and aarch64).
bool IsKernelFrame(const Frame& f) {
  return f.address >= 0xffff800000000000ULL || f.dso == "[kernel.kallsyms]";
}

// Blocks of "header\n\tADDR SYM (DSO)\n...\n\n".
std::vector<ScriptSample> ParsePerfScript(const std::string& text) {
  std::vector<ScriptSample> out;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (line.empty()) continue;
    if (line[0] != '\t') {
      out.push_back({absl::StrCat(line, "\n"), {}, {}, false});
      continue;
    }
    if (out.empty()) continue;
    absl::string_view rest = absl::StripLeadingAsciiWhitespace(line);
    size_t space = rest.find(' ');
    Frame f;
    if (!absl::SimpleHexAtoi(rest.substr(0, space), &f.address)) continue;
    size_t open = rest.rfind(" (");
    if (open != absl::string_view::npos && absl::EndsWith(rest, ")")) {
      f.dso = std::string(rest.substr(open + 2, rest.size() - open - 3));
    }
    if (f.address == ~uint64_t{0}) {
      out.back().minus_one_tail = true;
    } else if (IsKernelFrame(f)) {
      out.back().kernel.push_back(f.address);
    } else {
      out.back().user.push_back(f);
    }
  }
  return out;
}

struct OurSample {
  std::string header;
  std::vector<uint64_t> kernel;
  std::vector<Frame> user;
  unwinder::StopReason stop = unwinder::StopReason::kEndOfStack;
  std::string stop_detail;
  std::string error;  // the sample could not be prepared
  uint64_t stack_start = 0;  // the sample's SP: where the stack copy starts
  uint64_t last_sp = 0;    // the outermost frame's SP (its caller's CFA)
  uint64_t stack_end = 0;  // one past the valid stack copy
};

// Every sample of `path`, unwound.
class Unwinder : public proc::perf::EventHandler {
 public:
  Unwinder(const proc::perf::PerfDataReader& reader, proc::perf::SnapshotOptions o)
      : reader_(reader), snap_(reader.info(), std::move(o)) {}

  absl::Status OnEvent(const proc::perf::Event& e) override {
    maps_.Apply(e);
    if (e.type != proc::perf::kRecordSample) return absl::OkStatus();
    const proc::perf::EventAttr& attr = reader_.attrs().at(e.attr_index);
    OurSample s;
    cli::PerfScriptHeader h;
    h.comm = maps_.ThreadComm(e.sample.tid);
    h.tid = e.sample.tid;
    if (attr.sample_type & proc::perf::kSampleCpu) h.cpu = e.sample.cpu;
    h.time_ns = e.sample.time;
    h.period = e.sample.period;
    h.event = attr.name;
    s.header = cli::FormatPerfScriptHeader(h);
    s.kernel = proc::perf::KernelCallchain(e.sample);
    absl::StatusOr<proc::perf::PerfSnapshotter::Prepared> p =
        snap_.Prepare(e.sample, attr, maps_.Find(e.sample.pid));
    if (!p.ok()) {
      s.error = std::string(p.status().message());
      samples.push_back(std::move(s));
      return absl::OkStatus();
    }
    Space& space = spaces_[e.sample.pid];
    if (space.target_id != p->target_id) {
      space.space.reset();
      space.target = p->target;
      space.target_id = p->target_id;
      space.space = std::make_unique<unwinder::AddressSpace>(*space.target, cache_);
    }
    unwinder::ProcessStacks stacks =
        unwinder::UnwindTarget(*space.target, *space.space, options_);
    if (stacks.threads.size() != 1) {
      s.error = "no thread unwound";
    } else {
      const unwinder::ThreadStack& t = stacks.threads[0];
      s.stop = t.stop;
      s.stop_detail = t.stop_detail;
      if (!t.frames.empty()) s.last_sp = t.frames.back().sp;
      s.stack_start = p->target->InitialRegisters(e.sample.tid)->sp();
      s.stack_end = s.stack_start + e.sample.valid_stack().size();
      for (size_t i = 0; i < t.frames.size(); ++i) {
        cli::PerfFrameAddress a =
            cli::PerfScriptAddress(t.frames, i, space.target->mappings());
        s.user.push_back({a.address, a.dso});
      }
    }
    p->target->ClearSample();
    samples.push_back(std::move(s));
    return absl::OkStatus();
  }

  std::vector<OurSample> samples;

 private:
  struct Space {
    uint64_t target_id = 0;
    std::shared_ptr<proc::SnapshotTarget> target;
    std::unique_ptr<unwinder::AddressSpace> space;
  };
  const proc::perf::PerfDataReader& reader_;
  proc::perf::ProcessMaps maps_;
  proc::perf::PerfSnapshotter snap_;
  unwinder::ModuleCache cache_;
  unwinder::UnwindOptions options_;
  std::map<uint32_t, Space> spaces_;
};

bool IsPrefix(const std::vector<Frame>& a, const std::vector<Frame>& b) {
  if (a.size() > b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!(a[i] == b[i])) return false;
  }
  return true;
}

// Whether the address in the unwinder's "reading saved rN (...) at 0xADDR"
// is below `sp`: a save slot the epilogue has already popped, outside the
// stack copy that starts at SP.
bool SlotBelow(const std::string& detail, uint64_t sp) {
  size_t at = detail.find(" at 0x");
  if (at == std::string::npos) return false;
  size_t end = detail.find_first_not_of("0123456789abcdef", at + 6);
  uint64_t addr;
  if (!absl::SimpleHexAtoi(detail.substr(at + 6, end - at - 6), &addr)) return false;
  return addr < sp;
}

// Whether `f` (perf's frame 0, exact) is the instruction right after
// `mov $15,%rax; syscall` (x86_64 rt_sigreturn), read from the file.
bool IsAfterSigreturnSyscall(const Frame& f) {
  FILE* file = fopen(f.dso.c_str(), "rb");
  if (file == nullptr || f.address < 9) {
    if (file) fclose(file);
    return false;
  }
  unsigned char code[9];
  bool ok = fseek(file, static_cast<long>(f.address - 9), SEEK_SET) == 0 &&
            fread(code, 1, 9, file) == 9;
  fclose(file);
  static const unsigned char kSigreturn[9] = {0x48, 0xc7, 0xc0, 0x0f, 0x00,
                                              0x00, 0x00, 0x0f, 0x05};
  return ok && memcmp(code, kSigreturn, 9) == 0;
}

struct Case {
  std::string fixture;  // under testdata/perf/
  Mode mode;
  std::vector<std::string> extra = {};  // perf record options
  std::string tag = "";

  std::string Name() const {
    return absl::StrCat(fixture, mode == Mode::kPipe ? "_pipe" : "_file", tag);
  }
};

class PerfUnwindTest : public ::testing::TestWithParam<Case> {};

TEST_P(PerfUnwindTest, EverySampleMatchesPerfScript) {
  const std::string reason = proc::perf::testing::CannotRecordReason();
  if (!reason.empty()) GTEST_SKIP() << reason;
  const Case& c = GetParam();
  const std::string dir = ::testing::TempDir();
  absl::StatusOr<std::string> data = proc::perf::testing::RecordWithPerf(
      {harness::FixturePath(absl::StrCat("perf/", c.fixture))}, dir, c.Name(), c.mode,
      absl::Seconds(1.5), c.extra);
  ASSERT_TRUE(data.ok()) << data.status();
  absl::StatusOr<std::string> text =
      // perf script cuts every callchain (kernel + user) at
      // kernel.perf_event_max_stack entries (127) unless --max-stack says
      // otherwise; the Deep thread's walks are longer than that.
      proc::perf::testing::PerfScript(*data, {"--no-inline", "--max-stack", "4096"});
  ASSERT_TRUE(text.ok()) << text.status();
  std::vector<ScriptSample> theirs = ParsePerfScript(*text);

  absl::StatusOr<std::unique_ptr<proc::perf::PerfDataReader>> reader =
      proc::perf::PerfDataReader::OpenFile(*data);
  ASSERT_TRUE(reader.ok()) << reader.status();
  proc::perf::SnapshotOptions options;
  options.buildid_dir = proc::perf::testing::BuildIdDir(dir);
  // As perf script does for a pipe recording, which names no [vdso]
  // build-id: the recording is of this machine's kernel.
  options.use_own_vdso = true;
  Unwinder ours(**reader, options);
  ASSERT_TRUE((*reader)->Read(ours).ok());
  for (const std::string& w : (*reader)->warnings().kept()) ADD_FAILURE() << w;

  ASSERT_EQ(ours.samples.size(), theirs.size());
  ASSERT_GT(theirs.size(), 100u) << "too few samples to say anything";
  std::map<std::string, int> causes;
  int shown = 0;
  for (size_t i = 0; i < theirs.size(); ++i) {
    const OurSample& o = ours.samples[i];
    const ScriptSample& t = theirs[i];
    EXPECT_EQ(o.header, t.header) << "sample " << i;
    EXPECT_EQ(o.kernel, t.kernel) << "sample " << i << " " << t.header;
    std::string cause;
    if (!o.error.empty()) {
      cause = t.user.empty() ? "no_user_frames_both" : "not_prepared";
    } else if (o.user == t.user) {
      cause = "match";
    } else if (o.error.empty() && o.user.size() == 1 && !t.user.empty() &&
               o.user[0] == t.user[0] &&
               o.stop == unwinder::StopReason::kNoUnwindInfo &&
               IsAfterSigreturnSyscall(t.user[0])) {
      // TODO(issue 13): frame 0 is the instruction after the rt_sigreturn
      // syscall of glibc's __restore_rt (the sample hit the kernel inside
      // sigreturn), one past the end of the FDE glibc gives __restore_rt
      // (x86_64 libc: [0x3c04f, 0x3c059), pc 0x3c059), so no CFI covers
      // it and our walk stops; perf (libunwind) recognises the sigreturn
      // frame. An unwinder bug (reported to the lead), not a reader one.
      cause = "frame0_after_rt_sigreturn_syscall";
    } else if (o.user.size() == t.user.size() + 1 && IsPrefix(t.user, o.user) &&
               o.last_sp == o.stack_end && t.minus_one_tail) {
      // perf's gap, not ours: our outermost frame's return address is the
      // last 8 bytes of the stack copy (its CFA is the copy's end), which
      // perf's libunwind access_mem refuses ("addr + sizeof(unw_word_t) >=
      // end" in tools/perf/util/unwind-libunwind-local.c; libdw's check in
      // unwind-libdw.c is "> end"), so perf reads 0 there and prints a
      // last frame ffffffffffffffff instead.
      cause = "perf_refuses_last_word_of_stack_copy";
    } else if (o.stop == unwinder::StopReason::kMemoryError &&
               absl::StrContains(o.stop_detail, "reading saved") &&
               SlotBelow(o.stop_detail, o.stack_start) && IsPrefix(o.user, t.user)) {
      // TODO(issue 13): the unwinder reads every saved register eagerly; in
      // an epilogue the CFI still names a save slot below SP, outside the
      // stack copy, and the walk stops. The lead is making register
      // recovery lazy (unwinder/cfi); then this cause must disappear and
      // this branch go.
      cause = "epilogue_saved_register_below_sp";
    } else {
      cause = "other";
      if (shown++ < 10) {
        size_t d = 0;
        while (d < o.user.size() && d < t.user.size() && o.user[d] == t.user[d]) ++d;
        const size_t from = d < 3 ? 0 : d - 3;
        auto window = [&](const std::vector<Frame>& v) {
          return std::vector<Frame>(v.begin() + std::min(from, v.size()),
                                    v.begin() + std::min(d + 3, v.size()));
        };
        ADD_FAILURE() << "sample " << i << " " << t.header << "perf " << t.user.size()
                      << " frames, ours " << o.user.size() << ", first difference at "
                      << d << "; frames " << from << "..:\nperf:\n"
                      << Describe(window(t.user)) << "ours (stop "
                      << unwinder::StopReasonName(o.stop) << ": " << o.stop_detail
                      << "):\n"
                      << Describe(window(o.user)) << o.error;
      }
    }
    ++causes[cause];
  }
  std::string summary;
  for (const auto& [cause, n] : causes) absl::StrAppend(&summary, cause, "=", n, " ");
  std::printf("%s: %zu samples: %s\n", c.Name().c_str(), theirs.size(), summary.c_str());
  EXPECT_EQ(causes["other"], 0) << summary;
  EXPECT_EQ(causes["not_prepared"], 0) << summary;
  // At least the cause TODO(issue 13) names must be rare; the lead tightens
  // this to 0 with the lazy register recovery.
  EXPECT_LT(causes["epilogue_saved_register_below_sp"], theirs.size() / 20) << summary;
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, PerfUnwindTest,
    ::testing::Values(Case{"perf_busy_O2_nofp_pie", Mode::kFile},
                      Case{"perf_busy_O2_nofp_pie", Mode::kPipe},
                      Case{"perf_busy_O0_fp_pie", Mode::kFile},
                      Case{"perf_busy_O2_fp_nopie", Mode::kFile},
                      // Build-ids in MMAP2 (checked against each file).
                      Case{"perf_busy_O2_nofp_pie", Mode::kFile, {"--buildid-mmap"},
                           "_buildid_mmap"}),
    [](const ::testing::TestParamInfo<Case>& info) { return info.param.Name(); });

}  // namespace
}  // namespace unwindd
