// Live aarch64 (issue 17): `unwind pid` inside a real aarch64 Linux kernel
// (qemu-system-aarch64, TCG, -cpu max with pointer authentication), checked
// against gdb and eu-stack running in the same guest, and the guest's
// samples unwound again here on the x86_64 host.
//
// run.sh boots the guest and guest_init.sh prints every result to the
// serial console; this test runs it (or reads a finished run:
// UNWINDD_AARCH64_LIVE_OUT=DIR, the --out of `run.sh`) and checks:
//   - every thread's PCs equal gdb's (all fixtures) and eu-stack's (fixtures
//     without pointer authentication: eu-stack 0.188 does not strip PACs and
//     prints signed return addresses);
//   - no PAC bits in any PC we print, with the NT_ARM_PAC_MASK the target
//     reported live (and the same mask read by a plain PTRACE_GETREGSET),
//     while the pac fixtures' stacks really hold signed return addresses;
//   - frames through the vDSO's __kernel_rt_sigreturn: where gdb shows
//     "<signal handler called>" we have the [vdso] frame, then a "signal"
//     frame;
//   - TracerPid is 0 for every thread after `unwind`, gdb and the sampler;
//   - each thread's sample (registers + stack copy + maps + [vdso], taken in
//     the guest) unwound on the host through proc::SnapshotTarget with the
//     guest's files gives the guest's frames and methods.
// It skips, saying why, when qemu-system-aarch64 or the cross toolchain is
// missing.
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "arch/pac_mask.h"
#include "gtest/gtest.h"
#include "memory/scoped_fd.h"
#include "proc/snapshot_target.h"
#include "proc/target.h"
#include "testdata/aarch64/live/console_log.h"
#include "testdata/aarch64/live/snapshot_text.h"
#include "testdata/harness/frames.h"
#include "testdata/harness/subprocess.h"
#include "testdata/harness/tools.h"
#include "unwinder/method.h"
#include "unwinder/module_cache.h"
#include "unwinder/source_policy.h"
#include "unwinder/unwinder.h"

namespace unwindd::testdata::live {
namespace {

using harness::Comparison;
using harness::CompareThreadFrames;
using harness::ThreadFrames;
using harness::UnwindOutput;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// What the guest run left behind, loaded once for all tests.
struct GuestRun {
  std::string skip_reason;  // non-empty: skip every test
  std::string error;        // non-empty: fail every test
  std::string out_dir;      // console.log, root/, timing.txt
  std::string timing;
  ConsoleLog log;
  std::map<int64_t, Capture> captures;  // by pid
};

GuestRun Load() {
  GuestRun run;
  if (const char* dir = std::getenv("UNWINDD_AARCH64_LIVE_OUT"); dir && *dir) {
    run.out_dir = dir;
  } else {
    const char* missing = std::getenv("UNWINDD_AARCH64_CROSS_MISSING");
    if (missing != nullptr && *missing != '\0') {
      run.skip_reason = absl::StrCat(
          "the aarch64 cross toolchain was missing when Bazel configured "
          "(", missing, "): apt-get install g++-aarch64-linux-gnu and the "
          ":arm64 -dev packages of scripts/requirements.txt, then "
          "`bazel sync --configure`");
      return run;
    }
    const std::string live = absl::StrCat(harness::RunfilesRoot(), "/testdata/aarch64/live");
    const char* tmp = std::getenv("TEST_TMPDIR");
    run.out_dir = absl::StrCat(tmp ? tmp : "/tmp", "/aarch64-live");
    absl::StatusOr<harness::ToolOutput> out = harness::RunTool(
        {"bash", live + "/run.sh",
         absl::StrCat("--unwind=", live, "/guest_binaries/unwind"),
         absl::StrCat("--capture=", live, "/guest_binaries/capture"),
         absl::StrCat("--out=", run.out_dir), "--timeout=2400"},
        absl::Minutes(55));
    if (!out.ok()) {
      run.error = absl::StrCat("run.sh: ", out.status().message());
      return run;
    }
    std::cerr << out->stderr_text;
    if (out->exit_code == 77) {
      run.skip_reason = out->stderr_text;
      return run;
    }
    if (out->exit_code != 0) {
      run.error = absl::StrCat("run.sh exited with ", out->exit_code, ":\n",
                               out->stderr_text);
      return run;
    }
  }
  const std::string console = ReadFile(run.out_dir + "/console.log");
  run.timing = ReadFile(run.out_dir + "/timing.txt");
  if (const char* keep = std::getenv("TEST_UNDECLARED_OUTPUTS_DIR")) {
    std::ofstream(absl::StrCat(keep, "/console.log"), std::ios::binary) << console;
  }
  absl::StatusOr<ConsoleLog> log = ParseConsoleLog(console);
  if (!log.ok()) {
    run.error = std::string(log.status().message());
    return run;
  }
  run.log = *std::move(log);
  absl::StatusOr<std::vector<Capture>> captures = ParseCaptures(console);
  if (!captures.ok()) {
    run.error = std::string(captures.status().message());
    return run;
  }
  for (Capture& c : *captures) run.captures[c.pid] = std::move(c);
  return run;
}

const GuestRun& GuestRunOnce() {
  static const GuestRun* run = new GuestRun(Load());
  return *run;
}

// Totals for the closing summary.
struct Totals {
  int threads_pac = 0, matched_pac = 0;      // vs gdb
  int threads_nopac = 0, matched_nopac = 0;  // vs gdb and eu-stack
  int signal_threads = 0;
  int signed_words = 0;
  int snapshot_threads = 0, snapshot_matched = 0;
  int snapshot_cut = 0;  // matched up to where the stack copy ends
  int tracer_checks = 0;
  int eu_cut = 0;  // threads eu-stack is held to up to the sigreturn
  int fp_threads = 0, fp_matched = 0, fp_frames = 0;
  int fp_cut = 0;  // fp-first walks that stop at the signal trampoline
};
Totals totals;

class LiveAarch64Test : public ::testing::Test {
 protected:
  void SetUp() override {
    const GuestRun& run = GuestRunOnce();
    if (!run.skip_reason.empty()) GTEST_SKIP() << run.skip_reason;
    ASSERT_TRUE(run.error.empty()) << run.error;
  }
};

// `unwind pid`'s JSON for a fixture; fails the test if absent or broken.
absl::StatusOr<UnwindOutput> Ours(const FixtureRun& f) {
  const ToolBlock* b = f.Block("unwind");
  if (b == nullptr) return absl::NotFoundError("no unwind block");
  if (b->exit_code != 0) {
    const ToolBlock* err = f.Block("unwind-stderr");
    return absl::InternalError(absl::StrCat("unwind exited with ", b->exit_code,
                                            ": ", err ? err->text : ""));
  }
  return harness::ParseUnwindJson(b->text);
}

TEST_F(LiveAarch64Test, GuestRanEveryFixtureWithPointerAuthentication) {
  const GuestRun& run = GuestRunOnce();
  std::cout << "kernel " << run.log.kernel << "; " << run.timing;
  EXPECT_TRUE(run.log.ended) << "the guest did not reach its end marker";
  EXPECT_TRUE(run.log.paca) << "-cpu max should offer address authentication";
  // 6 programs x {O0 fp, O2 nofp} x {pac, no pac} (run.sh).
  EXPECT_EQ(run.log.fixtures.size(), 24u);
  EXPECT_EQ(run.log.end_fixtures, static_cast<int>(run.log.fixtures.size()));
  for (const FixtureRun& f : run.log.fixtures) {
    EXPECT_TRUE(f.ready && f.done) << f.name << " did not start or finish";
    EXPECT_GE(f.threads, 2) << f.name;
  }
}

TEST_F(LiveAarch64Test, PacMaskReadLive) {
  const GuestRun& run = GuestRunOnce();
  ASSERT_FALSE(run.captures.empty());
  for (const auto& [pid, c] : run.captures) {
    SCOPED_TRACE(absl::StrCat("capture of pid ", pid));
    ASSERT_TRUE(c.pac_raw.has_value()) << "NT_ARM_PAC_MASK not readable";
    ASSERT_TRUE(c.pac_target.has_value()) << "LiveTarget reported no PAC mask";
    EXPECT_EQ(c.pac_target->insn_mask, c.pac_raw->insn_mask);
    EXPECT_EQ(c.pac_target->data_mask, c.pac_raw->data_mask);
    EXPECT_NE(c.pac_raw->insn_mask, 0u);
  }
  const arch::PacMask& m = *run.captures.begin()->second.pac_raw;
  std::cout << absl::StrFormat("NT_ARM_PAC_MASK data 0x%x insn 0x%x\n",
                               m.data_mask, m.insn_mask);
}

absl::StatusOr<std::unique_ptr<proc::Target>> SampleTarget(
    const Capture& c, const CapturedThread& t, const std::string& root);

bool InStackCopy(const CapturedThread& t, uint64_t sp) {
  return sp >= t.stack_address && sp - t.stack_address < t.stack.size();
}

// eu-stack (elfutils 0.188) and the arm64 vDSO's signal trampoline: the
// vDSO of Debian 12's 6.1 kernel has no .eh_frame, and elfutils has no
// aarch64 signal-frame unwinder, so past __kernel_rt_sigreturn it falls back
// to its frame-pointer unwinder (backends/aarch64_unwind.c) on the frame
// record the kernel pushed ({x29, x30} of the interrupted code): it prints
// the trampoline's PC again, then goes on from the interrupted x30, having
// lost the interrupted PC (gdb's aarch64 sigtramp unwinder reads the
// ucontext, as we do). For eu-stack only: a thread where gdb shows
// "<signal handler called>" at frame i and eu-stack's frame i+1 repeats
// frame i's PC is compared on frames 0..i. Both sides are cut; `cut`
// counts the threads.
void CutAtSigreturnForEuStack(const GdbMiFrames& gdb, ThreadFrames* ours,
                              ThreadFrames* eu, int* cut) {
  for (const auto& [tid, indexes] : gdb.signal_frames) {
    auto e = eu->find(tid);
    auto o = ours->find(tid);
    if (indexes.empty() || e == eu->end() || o == ours->end()) continue;
    const size_t i = indexes.front();
    if (e->second.size() > i + 1 && e->second[i + 1] == e->second[i]) {
      e->second.resize(i + 1);
      if (o->second.size() > i + 1) o->second.resize(i + 1);
      ++*cut;
    }
  }
}

TEST_F(LiveAarch64Test, FramesEqualGdbAndEuStack) {
  const GuestRun& run = GuestRunOnce();
  for (const FixtureRun& f : run.log.fixtures) {
    SCOPED_TRACE(f.name);
    absl::StatusOr<UnwindOutput> ours = Ours(f);
    ASSERT_TRUE(ours.ok()) << ours.status();
    const ThreadFrames pcs = ours->Pcs();
    EXPECT_EQ(static_cast<int>(pcs.size()), f.threads);
    const ToolBlock* gdb_block = f.Block("gdb");
    ASSERT_NE(gdb_block, nullptr);
    absl::StatusOr<GdbMiFrames> gdb = ParseGdbMiFrames(gdb_block->text);
    ASSERT_TRUE(gdb.ok()) << gdb.status() << "\n" << gdb_block->text;
    Comparison vs_gdb = CompareThreadFrames("unwind", pcs, "gdb", gdb->pcs);
    EXPECT_TRUE(vs_gdb.ok()) << f.name << ": unwind differs from gdb\n"
                             << vs_gdb.diff << ours->Describe();
    int matched = vs_gdb.matched;
    int cut = 0;
    if (!f.pac()) {
      const ToolBlock* eu_block = f.Block("eu-stack");
      ASSERT_NE(eu_block, nullptr);
      harness::SymbolNames names;
      absl::StatusOr<ThreadFrames> eu =
          harness::ParseEuStackOutput(eu_block->text, &names);
      ASSERT_TRUE(eu.ok()) << eu.status() << "\n" << eu_block->text;
      ThreadFrames pcs_for_eu = pcs;
      CutAtSigreturnForEuStack(*gdb, &pcs_for_eu, &*eu, &cut);
      Comparison vs_eu =
          CompareThreadFrames("unwind", pcs_for_eu, "eu-stack", *eu, &names);
      EXPECT_TRUE(vs_eu.ok()) << f.name << ": unwind differs from eu-stack\n"
                              << vs_eu.diff;
      matched = harness::CountMatchedBoth(pcs, pcs_for_eu, *eu, gdb->pcs);
      totals.threads_nopac += vs_gdb.threads;
      totals.matched_nopac += matched;
      totals.eu_cut += cut;
    } else {
      totals.threads_pac += vs_gdb.threads;
      totals.matched_pac += matched;
    }
    std::cout << f.name << ": " << vs_gdb.threads << " threads, " << matched
              << " matched (" << (f.pac() ? "gdb" : "gdb and eu-stack");
    if (cut > 0) std::cout << "; " << cut << " where eu-stack stops at the sigreturn";
    std::cout << ")\n";
  }
}

// gdb's frames as the fp-first walk must give them. An aarch64 frame record
// gives only a lower bound of the caller's sp (arch/frame_pointer.h), and
// the kernel's signal frame is found at the exact sp of the trampoline: a
// walk that reaches __kernel_rt_sigreturn through a frame record stops
// there (no_unwind_info) instead of reading registers from the wrong place.
// So a thread where gdb shows "<signal handler called>" at frame i is
// expected to have gdb's frames 0..i; `cut` counts those threads.
ThreadFrames FpFirstExpected(const GdbMiFrames& gdb, int* cut) {
  ThreadFrames want = gdb.pcs;
  for (const auto& [tid, indexes] : gdb.signal_frames) {
    if (indexes.empty()) continue;
    std::vector<uint64_t>& pcs = want[tid];
    if (pcs.size() > static_cast<size_t>(indexes.front()) + 1) {
      pcs.resize(indexes.front() + 1);
      ++*cut;
    }
  }
  return want;
}

// The frame-pointer builds unwound again with --sources=fp,eh_frame: the
// {x29, x30} frame records first (their x30 signed in the pac builds), CFI
// where a function has none. gdb's PCs (see FpFirstExpected), and frame
// records used, in the guest and from the guest's samples on the host.
TEST_F(LiveAarch64Test, FramePointerWalkEqualsGdb) {
  const GuestRun& run = GuestRunOnce();
  unwinder::ModuleCache cache;
  unwinder::UnwindOptions options;
  options.max_frames = 4096;
  absl::StatusOr<unwinder::SourcePolicy> fp_first =
      unwinder::SourcePolicy::Parse("fp,eh_frame");
  ASSERT_TRUE(fp_first.ok());
  options.sources = *fp_first;
  int fixtures = 0;
  for (const FixtureRun& f : run.log.fixtures) {
    if (!absl::StrContains(f.name, "_fp")) continue;
    ++fixtures;
    SCOPED_TRACE(f.name);
    const ToolBlock* b = f.Block("unwind-fp");
    ASSERT_NE(b, nullptr);
    ASSERT_EQ(b->exit_code, 0) << f.Block("unwind-fp-stderr")->text;
    absl::StatusOr<UnwindOutput> fp = harness::ParseUnwindJson(b->text);
    ASSERT_TRUE(fp.ok()) << fp.status();
    absl::StatusOr<GdbMiFrames> gdb = ParseGdbMiFrames(f.Block("gdb")->text);
    ASSERT_TRUE(gdb.ok()) << gdb.status();
    int cut = 0;
    const ThreadFrames want = FpFirstExpected(*gdb, &cut);
    Comparison cmp = CompareThreadFrames("unwind --sources=fp,eh_frame", fp->Pcs(),
                                         "gdb", want);
    EXPECT_TRUE(cmp.ok()) << cmp.diff << fp->Describe();
    int fp_frames = 0;
    for (const auto& [tid, t] : fp->threads) {
      for (const harness::UnwindFrame& fr : t.frames) fp_frames += fr.method == "frame_pointer";
      const bool at_trampoline = want.at(tid).size() < gdb->pcs.at(tid).size();
      EXPECT_EQ(t.stop, at_trampoline ? "no_unwind_info" : "end_of_stack") << "tid " << tid;
    }
    EXPECT_GT(fp_frames, 0);
    totals.fp_threads += cmp.threads;
    totals.fp_matched += cmp.matched;
    totals.fp_frames += fp_frames;
    totals.fp_cut += cut;

    // The same walk over the samples, on the host (threads whose older
    // frames are on a stack the sample did not copy are left out, see
    // GuestSamplesUnwoundOnTheHost).
    auto c = run.captures.find(f.pid);
    ASSERT_NE(c, run.captures.end());
    ThreadFrames host, host_want;
    for (const CapturedThread& t : c->second.threads) {
      absl::StatusOr<std::unique_ptr<proc::Target>> target =
          SampleTarget(c->second, t, run.out_dir + "/root");
      ASSERT_TRUE(target.ok()) << target.status();
      unwinder::ProcessStacks stacks = unwinder::UnwindTarget(**target, cache, options);
      ASSERT_EQ(stacks.threads.size(), 1u);
      const unwinder::ThreadStack& s = stacks.threads[0];
      if (s.stop == unwinder::StopReason::kMemoryError && !s.frames.empty() &&
          !InStackCopy(t, s.frames.back().sp)) {
        continue;
      }
      for (const unwinder::Frame& fr : s.frames) host[t.tid].push_back(fr.pc);
      host_want[t.tid] = want.at(t.tid);
    }
    Comparison on_host =
        CompareThreadFrames("host snapshot, fp first", host, "gdb", host_want);
    EXPECT_TRUE(on_host.ok()) << on_host.diff;
  }
  EXPECT_EQ(fixtures, 12);
}

// Every 8-byte word of the thread's stack copy that is a frame's PC with
// PAC bits set: the signed return addresses the unwinder had to strip.
int SignedReturnAddresses(const CapturedThread& t, const std::set<uint64_t>& pcs,
                          uint64_t insn_mask) {
  int n = 0;
  for (size_t i = 0; i + 8 <= t.stack.size(); i += 8) {
    uint64_t w = 0;
    for (int b = 7; b >= 0; --b) w = (w << 8) | t.stack[i + b];
    if ((w & insn_mask) != 0 && pcs.count(w & ~insn_mask) != 0) ++n;
  }
  return n;
}

TEST_F(LiveAarch64Test, NoPacBitsInOutputWhileStacksHoldSignedAddresses) {
  const GuestRun& run = GuestRunOnce();
  for (const FixtureRun& f : run.log.fixtures) {
    SCOPED_TRACE(f.name);
    absl::StatusOr<UnwindOutput> ours = Ours(f);
    ASSERT_TRUE(ours.ok()) << ours.status();
    auto c = run.captures.find(f.pid);
    ASSERT_NE(c, run.captures.end()) << "no sample of pid " << f.pid;
    ASSERT_TRUE(c->second.pac_target.has_value());
    const uint64_t mask = c->second.pac_target->insn_mask;
    int signed_words = 0;
    for (const auto& [tid, thread] : ours->threads) {
      std::set<uint64_t> pcs;
      for (const harness::UnwindFrame& fr : thread.frames) {
        EXPECT_EQ(fr.pc & (mask | 0xff00000000000000u), 0u)
            << absl::StrFormat("tid %d pc 0x%x keeps PAC bits", tid, fr.pc);
        pcs.insert(fr.pc);
      }
      for (const CapturedThread& t : c->second.threads) {
        if (t.tid == tid) signed_words += SignedReturnAddresses(t, pcs, mask);
      }
    }
    // -mbranch-protection=standard signs every saved return address of the
    // fixture's own functions (Debian 12's libc is not built with it).
    if (f.pac()) {
      EXPECT_GT(signed_words, 0) << "no signed return address on any stack";
    } else {
      EXPECT_EQ(signed_words, 0);
    }
    totals.signed_words += signed_words;
  }
}

TEST_F(LiveAarch64Test, SignalFramesThroughTheVdsoSigreturn) {
  const GuestRun& run = GuestRunOnce();
  int fixtures = 0;
  for (const FixtureRun& f : run.log.fixtures) {
    if (!absl::StartsWith(f.name, "signal_handler_")) continue;
    ++fixtures;
    SCOPED_TRACE(f.name);
    absl::StatusOr<UnwindOutput> ours = Ours(f);
    ASSERT_TRUE(ours.ok()) << ours.status();
    absl::StatusOr<GdbMiFrames> gdb = ParseGdbMiFrames(f.Block("gdb")->text);
    ASSERT_TRUE(gdb.ok()) << gdb.status();
    // selfkill, altstack and spinner each block inside a handler.
    EXPECT_EQ(gdb->signal_frames.size(), 3u);
    for (const auto& [tid, indexes] : gdb->signal_frames) {
      auto t = ours->threads.find(tid);
      ASSERT_NE(t, ours->threads.end());
      const std::vector<harness::UnwindFrame>& frames = t->second.frames;
      for (int i : indexes) {
        ASSERT_LT(static_cast<size_t>(i + 1), frames.size()) << "tid " << tid;
        EXPECT_EQ(frames[i].module, "[vdso]") << "tid " << tid << " frame " << i;
        EXPECT_EQ(frames[i + 1].method, "signal") << "tid " << tid << " frame " << i + 1;
      }
      ++totals.signal_threads;
    }
  }
  EXPECT_EQ(fixtures, 4);
}

TEST_F(LiveAarch64Test, TracerPidBackToZero) {
  const GuestRun& run = GuestRunOnce();
  for (const FixtureRun& f : run.log.fixtures) {
    SCOPED_TRACE(f.name);
    std::map<std::string, int> per_tool;
    for (const TracerCheck& t : f.tracers) {
      EXPECT_EQ(t.tracer_pid, 0) << "tid " << t.tid << " after " << t.after;
      ++per_tool[t.after];
      ++totals.tracer_checks;
    }
    EXPECT_EQ(per_tool["unwind"], f.threads);
    EXPECT_EQ(per_tool["gdb"], f.threads);
    EXPECT_EQ(per_tool["capture"], f.threads);
  }
}

// The sample of one thread as a SnapshotTarget over the guest's files (the
// initramfs tree run.sh left in out/root), reporting the mask read live.
class PacMaskTarget : public proc::ForwardingTarget {
 public:
  PacMaskTarget(std::unique_ptr<proc::Target> inner, std::optional<arch::PacMask> pac)
      : ForwardingTarget(*inner), inner_(std::move(inner)), pac_(pac) {}
  std::optional<arch::PacMask> pac_mask() const override { return pac_; }

 private:
  std::unique_ptr<proc::Target> inner_;
  std::optional<arch::PacMask> pac_;
};

absl::StatusOr<std::unique_ptr<proc::Target>> SampleTarget(
    const Capture& c, const CapturedThread& t, const std::string& root) {
  proc::Snapshot s;
  s.arch = arch::Arch::kAArch64;
  s.tid = t.tid;
  s.registers = t.registers;
  s.stack_address = t.stack_address;
  s.stack = t.stack;
  auto vdso = std::make_shared<const std::vector<uint8_t>>(c.vdso);
  for (const proc::Mapping& m : c.mappings) {
    proc::SnapshotMapping sm{m, nullptr, nullptr, ""};
    if (m.path == "[vdso]" && !c.vdso.empty() && m.start == c.vdso_address) {
      sm.image = vdso;
    } else if (m.IsFileBacked()) {
      memory::ScopedFd fd = memory::OpenCloexec((root + m.path).c_str(), O_RDONLY);
      if (!fd.valid()) return absl::NotFoundError(absl::StrCat("no ", root, m.path));
      absl::StatusOr<std::shared_ptr<const proc::SnapshotFile>> f =
          proc::SnapshotFile::FromFd(std::move(fd));
      if (!f.ok()) return f.status();
      sm.file = *f;
    }
    s.mappings.push_back(std::move(sm));
  }
  absl::StatusOr<std::unique_ptr<proc::Target>> target =
      proc::CreateSnapshotTarget(std::move(s), nullptr);
  if (!target.ok()) return target.status();
  return std::unique_ptr<proc::Target>(
      new PacMaskTarget(*std::move(target), c.pac_target));
}

// A sample holds the stack from SP up to the end of its mapping, as perf's
// PERF_SAMPLE_STACK_USER does. A thread interrupted on its own stack and
// now running a handler on an alternate signal stack (signal_handler's
// altstack thread) has its older frames on a stack the sample did not copy:
// there the host's walk must end with memory_error right after the frame
// whose SP left the copy, and equal the guest's frames up to it.
bool StopsWhereTheCopyEnds(const unwinder::ThreadStack& host,
                           const harness::UnwindThread& guest,
                           const CapturedThread& t) {
  if (host.stop != unwinder::StopReason::kMemoryError || host.frames.empty() ||
      host.frames.size() >= guest.frames.size()) {
    return false;
  }
  for (size_t i = 0; i < host.frames.size(); ++i) {
    if (host.frames[i].pc != guest.frames[i].pc) return false;
  }
  return !InStackCopy(t, host.frames.back().sp);
}

TEST_F(LiveAarch64Test, GuestSamplesUnwoundOnTheHost) {
  const GuestRun& run = GuestRunOnce();
  unwinder::ModuleCache cache;
  unwinder::UnwindOptions options;
  options.max_frames = 4096;
  const std::string root = run.out_dir + "/root";
  for (const FixtureRun& f : run.log.fixtures) {
    SCOPED_TRACE(f.name);
    EXPECT_EQ(f.capture_exit_code, 0);
    absl::StatusOr<UnwindOutput> ours = Ours(f);
    ASSERT_TRUE(ours.ok()) << ours.status();
    auto c = run.captures.find(f.pid);
    ASSERT_NE(c, run.captures.end()) << "no sample of pid " << f.pid;
    EXPECT_EQ(c->second.threads.size(), ours->threads.size());
    ThreadFrames host, guest;
    for (const CapturedThread& t : c->second.threads) {
      absl::StatusOr<std::unique_ptr<proc::Target>> target =
          SampleTarget(c->second, t, root);
      ASSERT_TRUE(target.ok()) << target.status();
      unwinder::ProcessStacks stacks = unwinder::UnwindTarget(**target, cache, options);
      ASSERT_EQ(stacks.threads.size(), 1u);
      const unwinder::ThreadStack& s = stacks.threads[0];
      auto g = ours->threads.find(t.tid);
      ASSERT_NE(g, ours->threads.end()) << "tid " << t.tid;
      ++totals.snapshot_threads;
      if (StopsWhereTheCopyEnds(s, g->second, t)) {
        ++totals.snapshot_cut;
        continue;
      }
      guest[t.tid] = ours->Pcs()[t.tid];
      for (size_t i = 0; i < s.frames.size(); ++i) {
        host[t.tid].push_back(s.frames[i].pc);
        if (i < g->second.frames.size()) {
          EXPECT_EQ(unwinder::MethodName(s.frames[i].method), g->second.frames[i].method)
              << "tid " << t.tid << " frame " << i;
        }
      }
      EXPECT_EQ(unwinder::StopReasonName(s.stop), g->second.stop) << "tid " << t.tid;
    }
    Comparison cmp = CompareThreadFrames("guest unwind", guest, "host snapshot", host);
    EXPECT_TRUE(cmp.ok()) << cmp.diff;
    totals.snapshot_matched += cmp.matched;
  }
}

class Summary : public ::testing::Environment {
 public:
  void TearDown() override {
    if (!GuestRunOnce().skip_reason.empty() || !GuestRunOnce().error.empty()) return;
    std::cout << "live aarch64: PAC on " << totals.matched_pac << "/"
              << totals.threads_pac << " threads matched (gdb); PAC off "
              << totals.matched_nopac << "/" << totals.threads_nopac
              << " matched (gdb and eu-stack; " << totals.eu_cut
              << " of them compared with eu-stack up to the vDSO sigreturn); "
              << "--sources=fp,eh_frame " << totals.fp_matched << "/"
              << totals.fp_threads << " matched gdb (" << totals.fp_frames
              << " frame_pointer frames; " << totals.fp_cut
              << " stop at the signal trampoline); " << totals.signal_threads
              << " threads through the vDSO sigreturn; " << totals.signed_words
              << " signed return addresses on the stacks, none in the output; "
              << totals.tracer_checks << " TracerPid checks; host snapshots "
              << totals.snapshot_matched << "/" << totals.snapshot_threads
              << " threads matched, and " << totals.snapshot_cut
              << " up to where the sampled stack ends (alternate signal stack)\n";
  }
};
const ::testing::Environment* const kSummary =
    ::testing::AddGlobalTestEnvironment(new Summary);

}  // namespace
}  // namespace unwindd::testdata::live
