// Unwinding at every instruction (issue 13): a fixture (stepper.c) is
// single-stepped with ptrace through qsort (msort_with_tmp's epilogues),
// its comparator, clock_gettime in the vDSO and our own -O0 and -O2
// functions. At each instruction the thread is unwound twice over the same
// files: (A) from a copy of its stack that starts exactly at sp, as a
// profiler's sample holds it, and (B) with the live process's memory as
// well, below sp included.
//
// B must reach the end of the stack at every instruction. A must give B's
// frames, except where the only saved copy of a value a caller needs lies
// below sp: in an epilogue after `pop %rbp` (libc's msort_with_tmp before
// its tail call, a -O0 function at `ret` after `leave`) the CFI still says
// rbp is saved in the slot just popped, and the caller's CFA is rbp-based
// (qsort_r, -O0 code). The test checks that rule against frame 0's row
// itself. perf stops there as well (testdata/perf). Before lazy register
// recovery, every epilogue whose CFI names a popped slot stopped A, also
// where no caller needed the register.
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
#include "absl/strings/str_cat.h"
#include "arch/regset.h"
#include "gtest/gtest.h"
#include "memory/factories.h"
#include "memory/scoped_fd.h"
#include "proc/maps.h"
#include "proc/snapshot_target.h"
#include "testdata/harness/subprocess.h"
#include "testdata/harness/tools.h"
#include "unwinder/unwinder.h"

namespace unwindd {
namespace {

constexpr int kSteps = 20000;
constexpr uint64_t kStackCopy = 16 << 10;  // like perf --call-graph dwarf,16384

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

std::vector<uint64_t> Pcs(const unwinder::ThreadStack& t) {
  std::vector<uint64_t> out;
  for (const unwinder::Frame& f : t.frames) out.push_back(f.pc);
  return out;
}

bool IsPrefix(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b) {
  return a.size() <= b.size() && std::equal(a.begin(), a.end(), b.begin());
}

// Whether frame 0's unwind row saves the register `detail` names ("CFA
// register r6 (rbp) has no known value") at CFA + offset below sp.
bool SavedBelowSp(unwinder::AddressSpace& space, const arch::RegisterSet& regs,
                  const std::string& detail) {
  const size_t at = detail.find("CFA register r");
  int reg = -1;
  if (at == std::string::npos || !absl::StrContains(detail, "has no known value") ||
      std::sscanf(detail.c_str() + at, "CFA register r%d", &reg) != 1) {
    return false;
  }
  unwinder::MappedModule* mm = space.Find(regs.pc());
  if (mm == nullptr || mm->module == nullptr || reg < 0 || reg >= arch::kMaxRegisters) {
    return false;
  }
  absl::StatusOr<unwinder::ModuleRow> row = mm->module->FindRow(
      arch::FrameAddress::InstructionPointer(regs.pc() - mm->load_bias));
  if (!row.ok() || row->row.cfa.kind != unwinder::CfaRule::Kind::kRegOffset ||
      row->row.regs[reg].kind != unwinder::RegisterRule::Kind::kOffset) {
    return false;
  }
  const uint64_t cfa = regs.Get(row->row.cfa.reg) + row->row.cfa.offset;
  return cfa + row->row.regs[reg].value < regs.sp();
}

class EveryInstructionTest : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryInstructionTest, ACopyFromSpUnwindsLikeTheLiveProcess) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to ptrace the fixture";
  absl::StatusOr<harness::RunningProgram> p =
      harness::StartProgram(harness::RunfilesRoot() + "/testdata/step/" + GetParam());
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

  std::map<std::string, int> outcomes;
  int shown = 0;
  std::vector<uint8_t> stack;
  for (int step = 0; step < kSteps; ++step) {
    ASSERT_TRUE(tracee.Step()) << "step " << step;
    absl::StatusOr<arch::RegisterSet> regs = tracee.Registers();
    ASSERT_TRUE(regs.ok()) << regs.status();
    const uint64_t sp = regs->sp();
    stack.resize(std::min<uint64_t>(kStackCopy, stack_hi - sp));
    ASSERT_TRUE(live->ReadFully(sp, absl::MakeSpan(stack)).ok());

    auto unwind = [&](unwinder::AddressSpace& space, memory::Memory* process) {
      EXPECT_TRUE((*target)->SetSample({pid, *regs, sp, stack, process}).ok());
      unwinder::ProcessStacks out = unwinder::UnwindTarget(**target, space, {});
      (*target)->ClearSample();
      return out.threads.at(0);
    };
    const unwinder::ThreadStack a = unwind(copy_space, nullptr);
    const unwinder::ThreadStack b = unwind(live_space, live.get());

    // (B) The live walk is complete wherever the thread is.
    EXPECT_EQ(b.stop, unwinder::StopReason::kEndOfStack)
        << "step " << step << " pc 0x" << std::hex << regs->pc() << ": "
        << b.stop_detail;
    if (Pcs(a) == Pcs(b) && a.stop == b.stop) {
      ++outcomes["same"];
      continue;
    }
    // (A) Short only where a caller needs a register that frame 0's row
    // says is saved below sp.
    if (IsPrefix(Pcs(a), Pcs(b)) && a.stop == unwinder::StopReason::kMemoryError &&
        SavedBelowSp(copy_space, *regs, a.stop_detail)) {
      ++outcomes["value_saved_below_sp"];
      continue;
    }
    ++outcomes["other"];
    if (shown++ < 5) {
      ADD_FAILURE() << "step " << step << " pc 0x" << std::hex << regs->pc() << " (rel 0x"
                    << b.frames[0].rel_pc << ", frame 1 rel 0x"
                    << (b.frames.size() > 1 ? b.frames[1].rel_pc : 0) << ")" << std::dec
                    << ": copy from sp gives " << a.frames.size() << " frames ("
                    << unwinder::StopReasonName(a.stop) << ": " << a.stop_detail
                    << "), live " << b.frames.size();
    }
  }
  std::string summary;
  for (const auto& [k, n] : outcomes) absl::StrAppend(&summary, k, "=", n, " ");
  std::printf("%s: %d instructions: %s\n", GetParam().c_str(), kSteps, summary.c_str());
  EXPECT_EQ(outcomes["other"], 0) << summary;
}

INSTANTIATE_TEST_SUITE_P(Stepper, EveryInstructionTest,
                         ::testing::Values("stepper_O0_fp_pie", "stepper_O2_nofp_pie"));

}  // namespace
}  // namespace unwindd
