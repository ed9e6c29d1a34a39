// Unwinding at every instruction, against the true return addresses.
//
// A fixture (stepper.c, stepper_cxx.cc, in several compiler
// configurations) is single-stepped with ptrace through its own functions,
// libc's qsort (msort_with_tmp's epilogues), a comparator callback, the
// vDSO, PLT stubs, and in C++ a throw caught two frames up (libgcc's
// unwinder and the landing pads). At each instruction the thread is
// sampled as perf samples it: its registers, a copy of its stack that
// starts exactly at sp, and the process's mappings with their files. That
// sample is unwound (A), and so is the live thread with the process's
// memory below sp as well (B).
//
// The truth is a shadow stack kept by watching the thread step, with no
// unwind information at all: a `call` stores its return address (a word at
// the new sp that points just past the instruction that ran), and a return
// address is gone once sp is above its slot (a `ret`, or a landing pad
// that discards frames). It starts from the live walk at the first stop,
// inside a system call (where every tool agrees: the suite's eu-stack and
// gdb comparisons). Both walks must give exactly the shadow stack's frames
// and reach the end of the stack, at every instruction.
//
// Except where the stack itself no longer describes the calls: while
// libgcc's unwinder installs a handler's context for a C++ throw, it
// writes the handler frame's registers into _Unwind_RaiseException's (or
// _Unwind_Resume's) save slots, its return address slot included
// (uw_install_context_1), then moves sp to the handler's frame and jumps
// to the landing pad, with CFI that names the landing pad as the caller.
// For those instructions the stack's memory and its CFI name other callers
// than the `call`s did, and no unwinder that reads the stack (gdb,
// eu-stack, perf) can give the calls' return addresses. There, with frame
// 0 or the true frame 1 in one of libgcc's _Unwind_* entry points (their
// extent from libgcc_s's dynamic symbols), the two walks must agree with
// each other instead; everywhere else in libgcc they must be exact too.
#include <elf.h>
#include <fcntl.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "arch/regset.h"
#include "gtest/gtest.h"
#include "memory/factories.h"
#include "memory/scoped_fd.h"
#include "proc/maps.h"
#include "proc/snapshot_target.h"
#include "testdata/harness/subprocess.h"
#include "testdata/harness/tools.h"
#include "unwinder/testing/describe_walk.h"
#include "unwinder/unwinder.h"

namespace unwindd {
namespace {

using unwinder::testing::DescribeWalk;

constexpr uint64_t kStackCopy = 16 << 10;  // like perf --call-graph dwarf,16384
constexpr int kMaxCallLength = 15;         // the longest x86 instruction

// ptrace's attachment to one thread, released (detach) at the end.
class Tracee {
 public:
  explicit Tracee(pid_t pid) : pid_(pid) {}
  ~Tracee() {
    if (attached_) ptrace(PTRACE_DETACH, pid_, nullptr, nullptr);
  }
  bool Attach() {
    if (ptrace(PTRACE_SEIZE, pid_, nullptr, nullptr) != 0) return false;
    attached_ = true;
    return ptrace(PTRACE_INTERRUPT, pid_, nullptr, nullptr) == 0 && Wait();
  }
  bool Step() { return ptrace(PTRACE_SINGLESTEP, pid_, nullptr, nullptr) == 0 && Wait(); }
  absl::StatusOr<arch::RegisterSet> Registers() {
    alignas(8) uint8_t buf[1024];
    iovec iov = {buf, sizeof(buf)};
    if (ptrace(PTRACE_GETREGSET, pid_, reinterpret_cast<void*>(NT_PRSTATUS), &iov) != 0) {
      return absl::InternalError("PTRACE_GETREGSET");
    }
    return arch::RegistersFromPrStatus(arch::Arch::kX86_64,
                                       absl::MakeConstSpan(buf, iov.iov_len));
  }

 private:
  bool Wait() {
    int status = 0;
    return waitpid(pid_, &status, __WALL) == pid_ && WIFSTOPPED(status);
  }
  pid_t pid_;
  bool attached_ = false;
};

// The thread's true return addresses, innermost first, kept from what each
// instruction did to pc and sp (x86_64: 8-byte return address slots).
class ShadowStack {
 public:
  // The callers of the first stop: frame k's return address and its slot,
  // which is 8 below the caller's sp (the unwinder's Frame::sp).
  explicit ShadowStack(const std::vector<unwinder::Frame>& frames) {
    for (size_t k = frames.size(); k-- > 1;) entries_.push_back({frames[k].pc, frames[k].sp - 8});
  }

  // One instruction ran: from (pc0, sp0) to (pc1, sp1), and `top` is the
  // word now at sp1.
  void Observe(uint64_t pc0, uint64_t sp0, uint64_t sp1, uint64_t top) {
    while (!entries_.empty() && entries_.back().slot < sp1) entries_.pop_back();
    if (sp1 == sp0 - 8 && top > pc0 && top <= pc0 + kMaxCallLength) {
      entries_.push_back({top, sp1});  // a call stored its return address
    }
  }

  // Frame 0 at `pc`, then every return address.
  std::vector<uint64_t> Frames(uint64_t pc) const {
    std::vector<uint64_t> out = {pc};
    for (size_t i = entries_.size(); i-- > 0;) out.push_back(entries_[i].ra);
    return out;
  }

 private:
  struct Entry {
    uint64_t ra;
    uint64_t slot;
  };
  std::vector<Entry> entries_;  // outermost first
};

// The target address ranges of libgcc_s's _Unwind_* entry points (the
// functions that install a handler's context), from its dynamic symbols.
std::vector<std::pair<uint64_t, uint64_t>> LibgccUnwindEntryPoints(
    const std::vector<proc::Mapping>& maps) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  for (const proc::Mapping& m : maps) {
    if (m.path.find("/libgcc_s.so") == std::string::npos || m.offset != 0) continue;
    absl::StatusOr<harness::ToolOutput> nm =
        harness::RunTool({"nm", "-D", "--defined-only", "-S", m.path}, absl::Seconds(30));
    if (!nm.ok()) continue;
    for (absl::string_view line : absl::StrSplit(nm->stdout_text, '\n')) {
      std::vector<std::string> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
      uint64_t value = 0, size = 0;
      if (f.size() == 4 && absl::StartsWith(f[3], "_Unwind_") &&
          absl::SimpleHexAtoi(f[0], &value) && absl::SimpleHexAtoi(f[1], &size)) {
        out.emplace_back(m.start + value, m.start + value + size);  // first mapping: bias
      }
    }
  }
  return out;
}

std::vector<uint64_t> Pcs(const unwinder::ThreadStack& t) {
  std::vector<uint64_t> out;
  for (const unwinder::Frame& f : t.frames) out.push_back(f.pc);
  return out;
}

std::string Hex(const std::vector<uint64_t>& pcs) {
  return absl::StrJoin(pcs, " ", [](std::string* out, uint64_t v) {
    absl::StrAppend(out, absl::Hex(v));
  });
}

struct Fixture {
  std::string name;
  int steps;
};

void PrintTo(const Fixture& f, std::ostream* os) { *os << f.name; }

class EveryInstructionTest : public ::testing::TestWithParam<Fixture> {};

TEST_P(EveryInstructionTest, ASampleFromSpUnwindsToTheTrueReturnAddresses) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to ptrace the fixture";
  const Fixture& fixture = GetParam();
  absl::StatusOr<harness::RunningProgram> p =
      harness::StartProgram(harness::RunfilesRoot() + "/testdata/step/" + fixture.name);
  ASSERT_TRUE(p.ok()) << p.status();
  const pid_t pid = p->pid();
  Tracee tracee(pid);
  ASSERT_TRUE(tracee.Attach());

  // The files behind the mappings, and the vDSO's bytes: what a profiler's
  // sample comes with. They do not change while the thread steps.
  std::unique_ptr<memory::Memory> live = memory::CreateProcessMemory(pid);
  absl::StatusOr<std::vector<proc::Mapping>> maps = proc::ReadMaps(pid);
  ASSERT_TRUE(maps.ok()) << maps.status();
  std::vector<proc::SnapshotMapping> mappings;
  uint64_t stack_hi = 0;
  for (const proc::Mapping& m : *maps) {
    proc::SnapshotMapping sm{m, nullptr, nullptr, ""};
    if (m.IsFileBacked()) {
      absl::StatusOr<std::shared_ptr<const proc::SnapshotFile>> f =
          proc::SnapshotFile::FromFd(memory::OpenCloexec(m.path.c_str(), O_RDONLY));
      if (f.ok()) sm.file = *f;
    } else if (m.path == "[vdso]") {
      auto image = std::make_shared<std::vector<uint8_t>>(m.end - m.start);
      ASSERT_TRUE(live->ReadFully(m.start, absl::MakeSpan(*image)).ok());
      sm.image = image;
    } else if (m.path == "[stack]") {
      stack_hi = m.end;
    }
    mappings.push_back(std::move(sm));
  }
  ASSERT_NE(stack_hi, 0u);
  absl::StatusOr<std::unique_ptr<proc::SnapshotTarget>> target =
      proc::SnapshotTarget::Create(arch::Arch::kX86_64, pid, std::move(mappings));
  ASSERT_TRUE(target.ok()) << target.status();
  unwinder::ModuleCache cache;
  unwinder::AddressSpace copy_space(**target, cache);
  unwinder::AddressSpace live_space(**target, cache);
  // The samples again, as a profiler's stream of one thread: each walk may
  // take its outer frames from the last one (unwinder/walk_replay.h), and
  // must give exactly what the walk without it (A) gives.
  unwinder::AddressSpace replay_space(**target, cache);
  unwinder::UnwindOptions replaying;
  replaying.thread_key = 1;
  int replay_differs = 0;

  std::vector<uint8_t> stack;
  auto unwind = [&](const arch::RegisterSet& regs, unwinder::AddressSpace& space,
                    memory::Memory* process, const unwinder::UnwindOptions& options = {}) {
    const uint64_t sp = regs.sp();
    stack.resize(std::min<uint64_t>(kStackCopy, stack_hi - sp));
    EXPECT_TRUE(live->ReadFully(sp, absl::MakeSpan(stack)).ok());
    EXPECT_TRUE((*target)->SetSample({pid, regs, sp, stack, process}).ok());
    unwinder::ProcessStacks out = unwinder::UnwindTarget(**target, space, options);
    (*target)->ClearSample();
    return out.threads.at(0);
  };

  absl::StatusOr<arch::RegisterSet> regs = tracee.Registers();
  ASSERT_TRUE(regs.ok()) << regs.status();
  const unwinder::ThreadStack first = unwind(*regs, live_space, live.get());
  ASSERT_EQ(first.stop, unwinder::StopReason::kEndOfStack) << first.stop_detail;
  ShadowStack truth(first.frames);

  const std::vector<std::pair<uint64_t, uint64_t>> installers = LibgccUnwindEntryPoints(*maps);
  auto installing = [&](const std::vector<uint64_t>& frames) {
    for (size_t i = 0; i < frames.size() && i < 2; ++i) {
      for (const auto& [lo, hi] : installers) {
        if (frames[i] >= lo && frames[i] < hi) return true;
      }
    }
    return false;
  };
  int same = 0, installs = 0, failed = 0;
  std::map<std::string, int> failures;  // by frame 0's module
  for (int step = 0; step < fixture.steps; ++step) {
    const uint64_t pc0 = regs->pc(), sp0 = regs->sp();
    ASSERT_TRUE(tracee.Step()) << "step " << step;
    regs = tracee.Registers();
    ASSERT_TRUE(regs.ok()) << regs.status();
    absl::StatusOr<uint64_t> top = live->ReadU64(regs->sp());
    ASSERT_TRUE(top.ok()) << top.status();
    truth.Observe(pc0, sp0, regs->sp(), *top);
    const std::vector<uint64_t> want = truth.Frames(regs->pc());

    const unwinder::ThreadStack a = unwind(*regs, copy_space, nullptr);
    const unwinder::ThreadStack b = unwind(*regs, live_space, live.get());
    const unwinder::ThreadStack c = unwind(*regs, replay_space, nullptr, replaying);
    if (DescribeWalk(c) != DescribeWalk(a) && replay_differs++ < 8) {
      ADD_FAILURE() << fixture.name << " step " << step << " pc 0x" << std::hex << regs->pc()
                    << std::dec << ": the walk that may replay gives " << DescribeWalk(c)
                    << ", the walk that does not " << DescribeWalk(a);
    }
    const bool a_ok = Pcs(a) == want && a.stop == unwinder::StopReason::kEndOfStack;
    const bool b_ok = Pcs(b) == want && b.stop == unwinder::StopReason::kEndOfStack;
    if (a_ok && b_ok) {
      ++same;
      continue;
    }
    if (installing(want) && Pcs(a) == Pcs(b) && a.stop == b.stop) {
      ++installs;
      continue;
    }
    const unwinder::MappedModule* mm = copy_space.Find(regs->pc());
    ++failures[mm != nullptr ? mm->path : "?"];
    if (failed++ < 8) {
      const unwinder::ThreadStack& bad = a_ok ? b : a;
      ADD_FAILURE() << fixture.name << " step " << step << " pc 0x" << std::hex << regs->pc()
                    << " (" << (mm != nullptr ? mm->path : "?") << "+0x"
                    << (mm != nullptr ? regs->pc() - mm->load_bias : 0) << std::dec << "): "
                    << (a_ok ? "live walk" : "sample from sp") << " gives ["
                    << Hex(Pcs(bad)) << "] (" << unwinder::StopReasonName(bad.stop) << ": "
                    << bad.stop_detail << "), true return addresses [" << Hex(want) << "]";
    }
  }
  std::string where;
  for (const auto& [module, n] : failures) absl::StrAppend(&where, " ", module, "=", n);
  std::printf("%s: %d instructions, %d exact, %d in libgcc installing a handler's context "
              "(both walks agree), %d not%s\n",
              fixture.name.c_str(), fixture.steps, same, installs, failed, where.c_str());
  EXPECT_EQ(failed, 0);
  EXPECT_EQ(replay_differs, 0);
  const unwinder::WalkReplay::Stats& replayed = replay_space.walk_replay().stats();
  std::printf("%s: %lu of %lu walks took frames from the last one (%lu frames)\n",
              fixture.name.c_str(), static_cast<unsigned long>(replayed.replayed_walks),
              static_cast<unsigned long>(replayed.walks),
              static_cast<unsigned long>(replayed.replayed_frames));
  // The stepper's instructions are mostly below main's frames, which stay.
  EXPECT_GT(replayed.replayed_walks, replayed.walks / 2);
}

INSTANTIATE_TEST_SUITE_P(
    Stepper, EveryInstructionTest,
    ::testing::Values(Fixture{"stepper_O0_fp_pie", 20000}, Fixture{"stepper_O2_fp_pie", 20000},
                      Fixture{"stepper_O2_nofp_pie", 20000},
                      Fixture{"stepper_O3_nofp_nopie", 20000},
                      Fixture{"stepper_Os_nofp_pie_cet", 20000},
                      Fixture{"stepper_cxx_O0_fp_pie", 60000},
                      Fixture{"stepper_cxx_O2_nofp_pie", 60000},
                      Fixture{"stepper_cxx_Os_nofp_pie_cet", 60000}),
    [](const ::testing::TestParamInfo<Fixture>& info) { return info.param.name; });

}  // namespace
}  // namespace unwindd
