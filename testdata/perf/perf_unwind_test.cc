// End to end (issue 13): record a CPU-bound fixture with `perf record
// --call-graph dwarf`, unwind every sample in-process through
// proc::perf's snapshot target and unwinder::UnwindTarget, and compare
// each sample with `perf script --no-inline`: the header line, and the
// user frames, mapped the way perf prints them
// (service/cli/perf_script/perf_script.h states the rule).
//
// Differences are counted by cause and printed; any sample no named cause
// explains fails the test. The named causes:
//   perf_refuses_last_word_of_stack_copy  perf's (source quoted below);
//       objdump confirms our extra outermost frame is a call site
//   empty_stack_copy_perf_prints_nothing  perf's (machine.c quoted below);
//       readelf confirms no frame but ours can be known there
//   first_samples_perf_prints_nothing  perf's (unwind-libunwind.c quoted
//       below); readelf confirms CFI covers frame 0, and the slot it
//       names lies past the stack copy
//   perf_cannot_use_debug_frame  perf's; readelf confirms the frame perf
//       stops at or before is described by .debug_frame alone
//   perf_guesses_by_frame_pointer_without_eh_frame  perf's; readelf as
//       above, objdump confirms our caller is a call site
//   sampled_inside_execve_perf_prints_nothing  perf's; perf script's own
//       event listing confirms the process had exec'ed and mapped no code
//       yet at the sample's time
//   epilogue_popped_perf_stops_ours_goes_on  frame 0 is after a `pop` or
//       `leave` whose slot (below sp, outside the copy) the CFI row still
//       names; the register holds the caller's value already (our rule,
//       unwinder/cfi/rules.h); readelf and objdump confirm the row and the
//       pop, testdata/step the frames
//   in_rt_sigreturn_ours_goes_on  frame 0 is inside the kernel's
//       rt_sigreturn (just past `syscall`), where no FDE reaches: we
//       restore the signal frame and go on, perf stops; objdump and readelf
//       confirm both facts
// The kernel part of each callchain must equal perf's in every sample.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"
#include "proc/perf/perf_data.h"
#include "proc/perf/perf_snapshot.h"
#include "proc/perf/process_maps.h"
#include "proc/perf/testing/recording.h"
#include "service/cli/perf_script/perf_script.h"
#include "testdata/harness/binutils_facts.h"
#include "testdata/harness/subprocess.h"
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
  std::vector<std::string> kernel_symbols;  // as perf script names them
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
      out.push_back({absl::StrCat(line, "\n"), {}, {}, {}, false});
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
      if (space != absl::string_view::npos && open != absl::string_view::npos && open > space) {
        out.back().kernel_symbols.emplace_back(rest.substr(space + 1, open - space - 1));
      }
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
  std::vector<unwinder::Method> methods;  // per user frame
  unwinder::StopReason stop = unwinder::StopReason::kEndOfStack;
  std::string stop_detail;
  std::string error;  // the sample could not be prepared
  uint64_t stack_start = 0;  // the sample's SP: where the stack copy starts
  uint64_t last_sp = 0;    // the outermost frame's SP (its caller's CFA)
  uint64_t stack_end = 0;  // one past the valid stack copy
  uint32_t pid = 0;
  uint64_t time_ns = 0;
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
    s.pid = e.sample.pid;
    s.time_ns = e.sample.time;
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
      const cli::PerfScriptMappings table(space.target->mappings());
      for (size_t i = 0; i < t.frames.size(); ++i) {
        cli::PerfFrameAddress a = table.Address(t.frames, i);
        s.user.push_back({a.address, std::string(a.dso)});
        s.methods.push_back(t.frames[i].method);
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

// A binutils fact, where an error (a frame without a file) confirms nothing.
bool Confirmed(const absl::StatusOr<bool>& fact) {
  if (!fact.ok()) ADD_FAILURE() << fact.status();
  return fact.ok() && *fact;
}

// The binutils facts about a frame perf script printed (a file offset).
bool NoFde(const Frame& f) {
  absl::StatusOr<uint64_t> a = harness::FileAddress(f.dso, f.address);
  if (!a.ok()) return Confirmed(a.status());
  absl::StatusOr<std::optional<std::pair<uint64_t, uint64_t>>> fde =
      harness::FdeCovering(f.dso, *a);
  if (!fde.ok()) ADD_FAILURE() << fde.status();
  return fde.ok() && !fde->has_value();
}
// readelf: `f` is described by an FDE of .debug_frame and by none of
// .eh_frame (perf's unwinder reads only .eh_frame here).
bool DebugFrameOnly(const Frame& f) {
  absl::StatusOr<uint64_t> a = harness::FileAddress(f.dso, f.address);
  if (!a.ok()) return Confirmed(a.status());
  absl::StatusOr<std::optional<std::pair<uint64_t, uint64_t>>> eh =
      harness::FdeCovering(f.dso, *a);
  absl::StatusOr<std::optional<std::pair<uint64_t, uint64_t>>> debug =
      harness::FdeCovering(f.dso, *a, ".debug_frame");
  if (!eh.ok()) ADD_FAILURE() << eh.status();
  if (!debug.ok()) ADD_FAILURE() << debug.status();
  return eh.ok() && debug.ok() && !eh->has_value() && debug->has_value();
}

// The first of our frames whose caller we found through .debug_frame alone
// (readelf confirms no .eh_frame FDE covers it), or -1.
int FirstDebugFrameOnly(const OurSample& o) {
  for (size_t k = 0; k + 1 < o.user.size(); ++k) {
    if (o.methods[k + 1] == unwinder::Method::kDebugFrame && DebugFrameOnly(o.user[k])) {
      return static_cast<int>(k);
    }
  }
  return -1;
}

absl::StatusOr<bool> IsCallSite(const Frame& f) {
  absl::StatusOr<uint64_t> a = harness::FileAddress(f.dso, f.address);
  if (!a.ok()) return a.status();
  return harness::IsCallSite(f.dso, *a);
}
absl::StatusOr<bool> ReturnAddressUndefinedAt(const Frame& f) {
  absl::StatusOr<uint64_t> a = harness::FileAddress(f.dso, f.address);
  if (!a.ok()) return a.status();
  return harness::ReturnAddressUndefinedAt(f.dso, *a);
}
absl::StatusOr<bool> FollowsRtSigreturn(const Frame& f) {
  absl::StatusOr<uint64_t> a = harness::FileAddress(f.dso, f.address);
  if (!a.ok()) return a.status();
  return harness::FollowsRtSigreturn(f.dso, *a);
}

// Our stop detail names the address it could not read ("... at 0xADDR:
// ..."); true when that address is at or past the stack copy's end.
bool SlotPastCopy(const std::string& detail, uint64_t stack_end) {
  const size_t at = detail.find(" at 0x");
  if (at == std::string::npos) return false;
  absl::string_view rest = absl::string_view(detail).substr(at + 6);
  rest = rest.substr(0, rest.find_first_not_of("0123456789abcdef"));
  uint64_t slot = 0;
  return absl::SimpleHexAtoi(rest, &slot) && slot >= stack_end;
}

// readelf and objdump: the instruction before frame 0's popped a register
// (`pop`, `leave`) that the CFI row at frame 0 still says is saved at a
// slot below sp: frame 0 is in an epilogue.
bool InEpilogueAfterPop(const Frame& f) {
  absl::StatusOr<uint64_t> a = harness::FileAddress(f.dso, f.address);
  if (!a.ok()) return Confirmed(a.status());
  absl::StatusOr<std::vector<std::string>> below = harness::SavedBelowSpAt(f.dso, *a);
  if (!below.ok()) return Confirmed(below.status());
  return !below->empty() && Confirmed(harness::AfterPop(f.dso, *a));
}

// A caller printed as "return address - 1" whose return address is the
// first instruction of `mov $0xf,%rax; syscall` (7 + 2 bytes): a signal
// handler's return into the sigreturn trampoline (objdump).
bool IsSigreturnTrampoline(const Frame& f) {
  return Confirmed(FollowsRtSigreturn({f.address + 1 + 9, f.dso}));
}

// perf script's listing of a recording's task and mmap events
// (--show-task-events --show-mmap-events --ns): per pid, the times (ns) of
// its exec COMM records and of its executable MMAP2s.
struct ExecEvents {
  std::map<uint32_t, std::vector<uint64_t>> exec_ns, code_mmap_ns;
};

absl::StatusOr<ExecEvents> ListExecEvents(const std::string& data) {
  absl::StatusOr<std::string> text = proc::perf::testing::PerfScript(
      data, {"--show-task-events", "--show-mmap-events", "--ns", "-F", "pid,tid,time"});
  if (!text.ok()) return text.status();
  ExecEvents out;
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    // " 2752/2752  23293.682763: PERF_RECORD_COMM exec: name:2752/2752"
    const bool exec = absl::StrContains(line, "PERF_RECORD_COMM exec:");
    const bool code = absl::StrContains(line, "PERF_RECORD_MMAP") &&
                      (absl::StrContains(line, "]: r-xp") || absl::StrContains(line, "]: x "));
    if (!exec && !code) continue;
    std::vector<absl::string_view> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (f.size() < 2) continue;
    uint32_t pid = 0;
    uint64_t sec = 0, nsec = 0;
    std::vector<absl::string_view> t = absl::StrSplit(absl::StripSuffix(f[1], ":"), '.');
    if (!absl::SimpleAtoi(f[0].substr(0, f[0].find('/')), &pid) || t.size() != 2 ||
        t[1].size() != 9 || !absl::SimpleAtoi(t[0], &sec) || !absl::SimpleAtoi(t[1], &nsec)) {
      continue;
    }
    (exec ? out.exec_ns : out.code_mmap_ns)[pid].push_back(sec * 1000000000 + nsec);
  }
  return out;
}

// perf script's symbols for the sample's kernel callchain put it inside
// execve (e.g. load_elf_binary writing the new stack, called from
// bprm_execve): the new image may be mapped already, but the user
// registers are still the old image's until execve returns.
bool KernelInsideExecve(const ScriptSample& t) {
  for (const std::string& sym : t.kernel_symbols) {
    if (absl::StartsWith(sym, "bprm_execve") || absl::StartsWith(sym, "do_execveat_common") ||
        absl::StartsWith(sym, "__x64_sys_execve")) {
      return true;
    }
  }
  return false;
}

// perf's listing shows `pid` exec'ed at or before `time_ns` and mapped no
// code between that exec and the sample.
bool InsideExecve(const ExecEvents& e, uint32_t pid, uint64_t time_ns) {
  auto execs = e.exec_ns.find(pid);
  if (execs == e.exec_ns.end()) return false;
  uint64_t last_exec = 0;
  bool found = false;
  for (uint64_t t : execs->second) {
    if (t <= time_ns) last_exec = std::max(last_exec, t), found = true;
  }
  if (!found) return false;
  if (auto maps = e.code_mmap_ns.find(pid); maps != e.code_mmap_ns.end()) {
    for (uint64_t t : maps->second) {
      if (t >= last_exec && t <= time_ns) return false;
    }
  }
  return true;
}

std::string UnwindBinary() { return harness::RunfilesRoot() + "/service/unwind"; }

// The samples `unwind perf DATA --format=perf-script JOBS` prints, with
// HOME=dir (where perf recorded, and keeps its build-id cache).
std::vector<ScriptSample> CliPerfScript(const std::string& dir, const std::string& data,
                                        const char* jobs) {
  absl::StatusOr<harness::ToolOutput> cli =
      harness::RunTool({"env", absl::StrCat("HOME=", dir), UnwindBinary(), "perf", data,
                        "--format=perf-script", jobs},
                       absl::Seconds(120));
  EXPECT_TRUE(cli.ok()) << cli.status();
  if (!cli.ok()) return {};
  EXPECT_EQ(cli->exit_code, 0) << cli->stderr_text;
  return ParsePerfScript(cli->stdout_text);
}

struct Case {
  std::string fixture;  // under testdata/perf/, or a path under testdata/
  Mode mode;
  std::vector<std::string> extra = {};  // perf record options
  std::string tag = "";
  std::vector<std::string> args = {};  // the fixture's

  std::string Path() const {
    return harness::FixturePath(
        absl::StrContains(fixture, '/') ? fixture : absl::StrCat("perf/", fixture));
  }

  std::string Name() const {
    const size_t slash = fixture.rfind('/');
    return absl::StrCat(slash == std::string::npos ? fixture : fixture.substr(slash + 1),
                        mode == Mode::kPipe ? "_pipe" : "_file", tag);
  }
};

class PerfUnwindTest : public ::testing::TestWithParam<Case> {};

TEST_P(PerfUnwindTest, EverySampleMatchesPerfScript) {
  const std::string reason = proc::perf::testing::CannotRecordReason();
  if (!reason.empty()) GTEST_SKIP() << reason;
  const Case& c = GetParam();
  const std::string dir = ::testing::TempDir();
  std::vector<std::string> argv = {c.Path()};
  argv.insert(argv.end(), c.args.begin(), c.args.end());
  absl::StatusOr<std::string> data = proc::perf::testing::RecordWithPerf(
      argv, dir, c.Name(), c.mode, absl::Seconds(1.5), c.extra);
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

  // `unwind perf` (the CLI, its threads and its perf-script output) prints
  // exactly what the library path above gives, sample by sample: by
  // default (each sample unwound on the reading thread) and with workers.
  for (const char* jobs : {"--jobs=1", "--jobs=2"}) {
    SCOPED_TRACE(jobs);
    const std::vector<ScriptSample> printed = CliPerfScript(dir, *data, jobs);
    ASSERT_EQ(printed.size(), ours.samples.size());
    for (size_t i = 0; i < printed.size(); ++i) {
      EXPECT_EQ(printed[i].header, ours.samples[i].header) << "sample " << i;
      EXPECT_EQ(printed[i].kernel, ours.samples[i].kernel) << "sample " << i;
      EXPECT_TRUE(printed[i].user == ours.samples[i].user) << "sample " << i;
    }
  }
  std::optional<ExecEvents> exec_events;  // listed on first need
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
    } else if (!t.user.empty() && o.user.size() > 1 && o.user[0] == t.user[0] &&
               o.methods[1] == unwinder::Method::kSignal &&
               Confirmed(FollowsRtSigreturn(t.user[0])) && NoFde(t.user[0])) {
      // Ours goes further: the sample hit the kernel inside rt_sigreturn,
      // so frame 0 is just past glibc's `mov $0xf,%rax; syscall`, outside
      // every FDE (glibc's for __restore_rt ends at the syscall's end);
      // perf (libunwind) finds no CFI and stops or guesses, while we
      // recognise the trampoline (arch/x86_64/signal_frame.h) and restore
      // the signal frame sp still points at. Both facts come from
      // objdump/readelf.
      cause = "in_rt_sigreturn_ours_goes_on";
    } else if (t.user.empty() && o.user.size() == 1 && o.stack_end == o.stack_start &&
               o.user[0].dso != "[unknown]" &&
               (Confirmed(ReturnAddressUndefinedAt(o.user[0])) || NoFde(o.user[0]) ||
                (o.stop == unwinder::StopReason::kMemoryError &&
                 SlotPastCopy(o.stop_detail, o.stack_end)))) {
      // perf does no DWARF unwinding of a sample whose stack copy is empty
      // (tools/perf/util/machine.c: "if (!(sample->user_regs.regs &&
      // sample->user_stack.size)) return 0"), and prints no user frame; we
      // give frame 0 from the registers. Nothing more can be known there:
      // readelf confirms the CFI marks it the outermost frame, or no FDE
      // covers it (a new thread at its start: clone3's child), or our stop
      // detail names the return address's slot, which an empty copy cannot
      // hold (the kernel copied nothing: the loader's first instructions,
      // on a stack page not yet present when the timer fired).
      cause = "empty_stack_copy_perf_prints_nothing";
    } else if (t.user.empty() && o.user.size() == 1 && o.stack_end > o.stack_start &&
               o.stop == unwinder::StopReason::kMemoryError &&
               SlotPastCopy(o.stop_detail, o.stack_end) && o.user[0].dso != "[unknown]" &&
               !NoFde(o.user[0])) {
      // A process's first samples (the dynamic loader's start-up): perf
      // prints no user frame at all, not even the sampled PC, while its
      // per-process unwinder is not set up yet (tools/perf/util/
      // unwind-libunwind.c: "if (ops) return ops->get_entries(...);
      // return 0;", the ops being chosen from the first mapping whose file
      // type it can read). We give frame 0 from the registers and stop:
      // the return address's slot lies past the stack copy's end (the
      // kernel copied less than the frame: a page not yet present), as our
      // stop detail names it, and readelf confirms that an FDE covers the
      // PC, so the CFI, not a guess, put the slot there.
      cause = "first_samples_perf_prints_nothing";
    } else if (t.user.empty() && o.user.size() == 1 && o.user[0].dso == "[unknown]" &&
               [&] {
                 if (!exec_events) {
                   absl::StatusOr<ExecEvents> e = ListExecEvents(*data);
                   if (!e.ok()) ADD_FAILURE() << e.status();
                   exec_events = e.ok() ? *std::move(e) : ExecEvents{};
                 }
                 return InsideExecve(*exec_events, o.pid, o.time_ns) ||
                        KernelInsideExecve(t);
               }()) {
      // Sampled inside execve: the kernel had sent the exec COMM record
      // (perf forgets the old image's mappings there) but not yet mapped
      // the new program, so the sample's user registers are still the old
      // image's. perf prints no user frame for a thread without maps; we
      // give the PC (in no mapping: "[unknown]") and stop. perf script's
      // own event listing confirms the order: the exec, then the sample,
      // then the first executable mapping; or, where the kernel maps the
      // new program before execve returns (6.x), perf script's symbols for
      // the sample's kernel callchain show it inside execve.
      cause = "sampled_inside_execve_perf_prints_nothing";
    } else if (t.user.size() < o.user.size() && IsPrefix(t.user, o.user) &&
               FirstDebugFrameOnly(o) >= 0 &&
               FirstDebugFrameOnly(o) >= static_cast<int>(t.user.size()) - 1) {
      // perf's gap: its unwinder (libunwind, built here without .debug_frame
      // support) reads only .eh_frame, and gives up on a stack at or before
      // the first frame only .debug_frame describes, often right at frame 0
      // (it prints what it had before failing). We go on with .debug_frame;
      // readelf confirms that frame has an FDE in .debug_frame and none in
      // .eh_frame.
      cause = "perf_cannot_use_debug_frame";
    } else if (const int k = FirstDebugFrameOnly(o);
               k >= 0 && t.user.size() > static_cast<size_t>(k) + 1 &&
               std::vector<Frame>(t.user.begin(), t.user.begin() + k + 1) ==
                   std::vector<Frame>(o.user.begin(), o.user.begin() + k + 1) &&
               (t.user[k + 1].address != o.user[k + 1].address ||
                t.user[k + 1].dso != o.user[k + 1].dso) &&
               (Confirmed(IsCallSite(o.user[k + 1])) ||
                IsSigreturnTrampoline(o.user[k + 1]))) {
      // perf's other gap: where no .eh_frame describes frame k, libunwind
      // guesses its caller by frame pointer (rbp), which this code does
      // not keep, and prints what the guess gives. readelf confirms frame k
      // has only a .debug_frame FDE; objdump confirms that our caller
      // (from that FDE) returns just after a call, or, for a signal
      // handler, to the start of rt_sigreturn's trampoline.
      cause = "perf_guesses_by_frame_pointer_without_eh_frame";
    } else if (o.user.size() == t.user.size() + 1 && IsPrefix(t.user, o.user) &&
               o.last_sp == o.stack_end && t.minus_one_tail &&
               Confirmed(IsCallSite(o.user.back()))) {
      // perf's gap, not ours: our outermost frame's return address is the
      // last 8 bytes of the stack copy (its CFA is the copy's end), which
      // perf's libunwind access_mem refuses ("addr + sizeof(unw_word_t) >=
      // end" in tools/perf/util/unwind-libunwind-local.c; libdw's check in
      // unwind-libdw.c is "> end"), so perf reads 0 there and prints a
      // last frame ffffffffffffffff instead. objdump confirms that the
      // instruction before our extra return address is a call.
      cause = "perf_refuses_last_word_of_stack_copy";
    } else if (!t.user.empty() && t.user.size() < o.user.size() && IsPrefix(t.user, o.user) &&
               InEpilogueAfterPop(o.user[0])) {
      // Frame 0 is in an epilogue, after a `pop` or `leave` that restored
      // a register whose slot, now below sp, the CFI row still names;
      // perf's unwinder reads the slot, which lies outside the stack copy
      // (it starts at sp), and stops where a caller needs that register.
      // The register holds the caller's value already, and we use it
      // (unwinder/cfi/rules.h, ReadCalleeSaved). readelf confirms the row
      // names a slot below sp, objdump the pop before frame 0; the
      // single-stepped fixtures (testdata/step) confirm our frames against
      // the true return addresses at every instruction.
      cause = "epilogue_popped_perf_stops_ours_goes_on";
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
                      << Describe(window(o.user)) << o.error << "kernel: "
                      << absl::StrJoin(t.kernel_symbols, " <- ");
      }
    }
    ++causes[cause];
  }
  std::string summary;
  for (const auto& [cause, n] : causes) absl::StrAppend(&summary, cause, "=", n, " ");
  std::printf("%s: %zu samples: %s\n", c.Name().c_str(), theirs.size(), summary.c_str());
  EXPECT_EQ(causes["other"], 0) << summary;
  EXPECT_EQ(causes["not_prepared"], 0) << summary;
}

// A recording of the kernel's frame-pointer callchains instead of
// registers and stack copies (perf record -g, --call-graph fp): `unwind
// perf` gives each sample's recorded user callchain as its frames, every
// address and DSO as perf script prints it, sample by sample. The fixture
// keeps frame pointers, so most chains are deep.
TEST(PerfCallchainTest, RecordedUserCallchainsAreThoseOfPerfScript) {
  const std::string reason = proc::perf::testing::CannotRecordReason();
  if (!reason.empty()) GTEST_SKIP() << reason;
  const std::string dir = ::testing::TempDir();
  absl::StatusOr<std::string> data = proc::perf::testing::RecordWithPerf(
      {harness::FixturePath("perf/perf_busy_O0_fp_pie")}, dir, "callchain_fp", Mode::kFile,
      absl::Seconds(1.5), {"--call-graph", "fp"});
  ASSERT_TRUE(data.ok()) << data.status();
  absl::StatusOr<std::string> text =
      proc::perf::testing::PerfScript(*data, {"--no-inline", "--max-stack", "4096"});
  ASSERT_TRUE(text.ok()) << text.status();
  const std::vector<ScriptSample> theirs = ParsePerfScript(*text);
  ASSERT_GT(theirs.size(), 100u) << "too few samples to say anything";
  for (const char* jobs : {"--jobs=1", "--jobs=2"}) {
    SCOPED_TRACE(jobs);
    const std::vector<ScriptSample> ours = CliPerfScript(dir, *data, jobs);
    ASSERT_EQ(ours.size(), theirs.size());
    size_t deep = 0, ended_by_zero = 0;
    for (size_t i = 0; i < theirs.size(); ++i) {
      EXPECT_EQ(ours[i].header, theirs[i].header) << "sample " << i;
      EXPECT_EQ(ours[i].kernel, theirs[i].kernel) << "sample " << i;
      // The one rule where we differ: a return address of 0 ends the stack
      // (end_of_stack, as it ends every walk of ours: DESIGN.md), where
      // perf script prints the 0 the kernel read past the outermost frame,
      // whose frame pointer is 0, and whatever follows.
      std::vector<Frame> want = theirs[i].user;
      for (size_t k = 1; k < want.size(); ++k) {
        if (want[k].address == 0) {
          want.resize(k);
          ++ended_by_zero;
          break;
        }
      }
      EXPECT_TRUE(ours[i].user == want)
          << "sample " << i << " " << theirs[i].header << "perf:\n"
          << Describe(theirs[i].user) << "ours:\n"
          << Describe(ours[i].user);
      if (theirs[i].user.size() >= 4) ++deep;
    }
    // That the chains were used at all: the fixture's threads spend most
    // of their time 4 or more frames down (59% of samples on a quiet
    // machine, 40% with both cores busy), where a recording with no user
    // chains, or one we ignored, would have none.
    EXPECT_GT(deep, theirs.size() / 5) << "the fixture's chains should be deep";
    std::printf("%s: %zu samples, %zu deep, %zu ended by a return address of 0\n", jobs,
                theirs.size(), deep, ended_by_zero);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, PerfUnwindTest,
    ::testing::Values(Case{"perf_busy_O2_nofp_pie", Mode::kFile},
                      Case{"perf_busy_cxx_O2_nofp_pie", Mode::kFile},
                      // CFI only in .debug_frame (for the program's own code).
                      Case{"perf_busy_O2_nofp_pie_debugframe", Mode::kFile},
                      Case{"perf_busy_O2_nofp_pie", Mode::kPipe},
                      Case{"perf_busy_O0_fp_pie", Mode::kFile},
                      Case{"perf_busy_O2_fp_nopie", Mode::kFile},
                      // Build-ids in MMAP2 (checked against each file).
                      Case{"perf_busy_O2_nofp_pie", Mode::kFile, {"--buildid-mmap"},
                           "_buildid_mmap"},
                      // A fixed period (-c): the samples have no PERIOD
                      // field, and perf script prints the attr's.
                      Case{"perf_busy_O2_nofp_pie", Mode::kFile, {"-c", "250000"},
                           "_fixed_period"},
                      // zstd-compressed records (perf record -z), in a
                      // file and in a pipe.
                      Case{"perf_busy_cxx_O2_nofp_pie", Mode::kFile, {"-z"}, "_zstd"},
                      Case{"perf_busy_O2_nofp_pie", Mode::kPipe, {"-z"}, "_zstd"},
                      // A directory (perf record --threads: data, data.N).
                      Case{"perf_busy_cxx_O2_nofp_pie", Mode::kFile, {"--threads"},
                           "_threads"},
                      // Each thread's file its own compressed stream.
                      Case{"perf_busy_O2_nofp_pie", Mode::kFile, {"--threads", "-z"},
                           "_threads_zstd"},
                      // Stack copies of 64 KiB, frames of 2 KiB: `unwind perf`
                      // leaves the copies in the file and, after a thread's
                      // first walk, reads them in place in its mapping
                      // (service/cli/perf/sample_pipeline.cc). Two threads
                      // 8 to 40 frames deep: some walks end at the copy's end.
                      Case{"bench/corpus/corpus_c_O2_nofp_pie",
                           Mode::kFile,
                           {"--call-graph", "dwarf,65528"},
                           "_2k_frames",
                           {"2", "8", "40", "2048"}}),
    [](const ::testing::TestParamInfo<Case>& info) { return info.param.Name(); });

}  // namespace
}  // namespace unwindd
