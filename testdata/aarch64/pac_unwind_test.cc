// Pointer authentication end to end through the step loop: an aarch64
// snapshot of threads_O2_pac (built with -mbranch-protection=pac-ret, see
// make_fixtures.sh) whose stack holds PAC-signed return addresses, as
// paciasp leaves them. The CFI marks the rows with
// DW_CFA_AARCH64_negate_ra_state (Row::ra_signed); the step loop must strip
// every recovered PC with the target's mask, so no signed address reaches
// the output, and unsigned ones pass unchanged.
//
// Addresses are from `aarch64-linux-gnu-objdump -d threads_O2_pac` (file
// addresses; the snapshot maps the file at 0x5500000000, where qemu-user
// puts it). The test first checks the paciasp/autiasp bytes there, so a
// rebuilt fixture that moved them fails loudly instead of testing nothing.
#include <fcntl.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "arch/aarch64/regs.h"
#include "arch/pac_mask.h"
#include "gtest/gtest.h"
#include "memory/scoped_fd.h"
#include "proc/snapshot_target.h"
#include "proc/target.h"
#include "unwinder/module_cache.h"
#include "unwinder/unwinder.h"

namespace unwindd {
namespace {

constexpr uint64_t kBase = 0x5500000000;
// ReadForever: paciasp at 0xd04; `bl read` at 0xd38; autiasp at 0xd5c;
// ret at 0xd60. Its CFA is sp+48 with x30 at CFA-24 from 0xd28 to 0xd5c.
constexpr uint64_t kReadForeverCallRead = kBase + 0xd38;
constexpr uint64_t kReadForeverAutiasp = kBase + 0xd5c;
constexpr uint64_t kReadForeverRet = kBase + 0xd60;
// ReaderMiddle: paciasp; str x30, [sp, #-16]!; bl ReadForever (returns to
// 0xd70). CFA sp+16, x30 at CFA-16.
constexpr uint64_t kInReaderMiddle = kBase + 0xd70;
// Reader: paciasp; stp x19, x30, [sp, #-16]!; bl ReaderMiddle (returns to
// 0xd90). CFA sp+16, x30 at CFA-8.
constexpr uint64_t kInReader = kBase + 0xd90;

// SleeperChain: paciasp; str x30, [sp, #-32]!; ...; bl SleeperChain
// (returns to 0xcc4); ldr x30; autiasp (0xcc8); ret (0xccc); then the other
// path: bl SleepForever at 0xcd0. Its CFI wraps the first epilogue in
// remember_state (0xcc8) / negate_ra_state (0xccc) / restore_state (0xcd0),
// so at 0xcd0 the RA is saved and signed again.
constexpr uint64_t kInSleeperChain = kBase + 0xcc4;
constexpr uint64_t kSleeperChainRet = kBase + 0xccc;
constexpr uint64_t kSleeperChainCallSleep = kBase + 0xcd0;

constexpr uint32_t kPaciasp = 0xd503233f;
constexpr uint32_t kAutiasp = 0xd50323bf;

constexpr uint64_t kStack = 0x7ff000;

// What paciasp makes of `addr` with 48-bit VA and TBI (as under qemu-user):
// a PAC in bits 54..48, and (pac-ret without TBI) possibly bits 63..56.
uint64_t Sign(uint64_t addr, uint64_t pac) {
  return addr | (pac << 48);
}

std::string FixturePath() {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  return absl::StrCat(srcdir != nullptr ? srcdir : ".",
                      "/unwindd/testdata/aarch64/threads_O2_pac");
}

void PutLe(std::vector<uint8_t>& b, uint64_t offset, uint64_t v) {
  for (int i = 0; i < 8; ++i) b[offset + i] = (v >> (8 * i)) & 0xff;
}

// Forwards to a target and reports `mask` as its NT_ARM_PAC_MASK.
class WithPacMask : public proc::ForwardingTarget {
 public:
  WithPacMask(std::unique_ptr<proc::Target> inner, arch::PacMask mask)
      : ForwardingTarget(*inner), inner_(std::move(inner)), mask_(mask) {}
  std::optional<arch::PacMask> pac_mask() const override { return mask_; }

 private:
  std::unique_ptr<proc::Target> inner_;
  arch::PacMask mask_;
};

class PacUnwindTest : public ::testing::Test {
 protected:
  // A snapshot of one thread: `regs` (pc, sp, x30) and `stack` at kStack.
  std::unique_ptr<proc::Target> Snapshot(uint64_t pc, uint64_t sp,
                                         uint64_t x30,
                                         std::vector<uint8_t> stack) {
    memory::ScopedFd fd = memory::OpenCloexec(FixturePath().c_str(), O_RDONLY);
    EXPECT_TRUE(fd.valid()) << FixturePath();
    absl::StatusOr<std::shared_ptr<const proc::SnapshotFile>> file =
        proc::SnapshotFile::FromFd(std::move(fd));
    EXPECT_TRUE(file.ok()) << file.status();
    proc::Snapshot s;
    s.arch = arch::Arch::kAArch64;
    s.tid = 1;
    s.registers = arch::RegisterSet(arch::Arch::kAArch64);
    s.registers.set_pc(pc);
    s.registers.set_sp(sp);
    s.registers.Set(arch::aarch64::kLr, x30);
    s.stack_address = kStack;
    s.stack = std::move(stack);
    proc::Mapping text;
    text.start = kBase;
    text.end = kBase + 0x2000;
    text.offset = 0;
    text.read = text.exec = true;
    text.path = "/threads_O2_pac";
    s.mappings.push_back({text, *file, nullptr});
    absl::StatusOr<std::unique_ptr<proc::Target>> t =
        proc::CreateSnapshotTarget(std::move(s), nullptr);
    EXPECT_TRUE(t.ok()) << t.status();
    return t.ok() ? *std::move(t) : nullptr;
  }

  std::vector<uint64_t> Pcs(proc::Target& target, std::string* stop) {
    unwinder::ProcessStacks stacks =
        unwinder::UnwindTarget(target, cache_, unwinder::UnwindOptions{});
    std::vector<uint64_t> pcs;
    if (stacks.threads.size() != 1) return pcs;
    for (const unwinder::Frame& f : stacks.threads[0].frames) {
      pcs.push_back(f.pc);
    }
    *stop = std::string(unwinder::StopReasonName(stacks.threads[0].stop));
    return pcs;
  }

  // ReadForever's frame at kStack (48 bytes, signed RA to ReaderMiddle at
  // +24), ReaderMiddle's (16 bytes, signed RA to Reader at +0), Reader's
  // (16 bytes, a signed 0 at +8: the end of the stack).
  std::vector<uint8_t> ThreeFrames(uint64_t pac_mask_shift_or) {
    std::vector<uint8_t> stack(48 + 16 + 16, 0);
    PutLe(stack, 24, Sign(kInReaderMiddle, 0x2a) | pac_mask_shift_or);
    PutLe(stack, 48, Sign(kInReader, 0x13) | pac_mask_shift_or);
    PutLe(stack, 64 + 8, Sign(0, 0x55));
    return stack;
  }

  unwinder::ModuleCache cache_;
};

TEST_F(PacUnwindTest, FixtureStillHasTheExpectedCode) {
  std::unique_ptr<proc::Target> t = Snapshot(kBase, kStack, 0, {0});
  ASSERT_NE(t, nullptr);
  auto insn = [&](uint64_t addr) { return *t->memory().ReadU32(addr); };
  EXPECT_EQ(insn(kBase + 0xd04), kPaciasp);
  EXPECT_EQ(insn(kReadForeverAutiasp), kAutiasp);
  EXPECT_EQ(insn(kBase + 0xd64), kPaciasp);
  EXPECT_EQ(insn(kBase + 0xd80), kPaciasp);
  EXPECT_EQ(insn(kInReaderMiddle - 4) >> 26, 0x25u);  // bl
  EXPECT_EQ(insn(kInReader - 4) >> 26, 0x25u);        // bl
  EXPECT_EQ(insn(kBase + 0xca0), kPaciasp);
  EXPECT_EQ(insn(kSleeperChainRet - 4), kAutiasp);
  EXPECT_EQ(insn(kSleeperChainCallSleep) >> 26, 0x25u);  // bl
  EXPECT_EQ(insn(kInSleeperChain - 4) >> 26, 0x25u);     // bl
}

TEST_F(PacUnwindTest, RememberRestoreStateKeepsTheSignedState) {
  // Frame 0 right after restore_state: the row is signed again and x30 is
  // on the stack at CFA-32 (CFA sp+32). Its caller is SleeperChain itself.
  std::vector<uint8_t> stack(64, 0);
  PutLe(stack, 0, Sign(kInSleeperChain, 0x3c));
  PutLe(stack, 32, Sign(0, 0x21));  // outermost
  std::unique_ptr<proc::Target> t =
      Snapshot(kSleeperChainCallSleep, kStack, Sign(0x4444, 0x7f), stack);
  ASSERT_NE(t, nullptr);
  std::string stop;
  EXPECT_EQ(Pcs(*t, &stop), (std::vector<uint64_t>{kSleeperChainCallSleep,
                                                   kInSleeperChain}));
  EXPECT_EQ(stop, "end_of_stack");

  // Inside the remembered region, after negate_ra_state: at `ret` x30 is
  // authenticated (unsigned) and the frame is popped (CFA = sp).
  t = Snapshot(kSleeperChainRet, kStack + 32, kInSleeperChain, stack);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(Pcs(*t, &stop),
            (std::vector<uint64_t>{kSleeperChainRet, kInSleeperChain}));
}

TEST_F(PacUnwindTest, SignedSavedReturnAddressesAreStripped) {
  std::unique_ptr<proc::Target> t =
      Snapshot(kReadForeverCallRead, kStack, Sign(0x1234, 0x7f), ThreeFrames(0));
  ASSERT_NE(t, nullptr);
  std::string stop;
  EXPECT_EQ(Pcs(*t, &stop),
            (std::vector<uint64_t>{kReadForeverCallRead, kInReaderMiddle,
                                   kInReader}));
  EXPECT_EQ(stop, "end_of_stack");
}

TEST_F(PacUnwindTest, ReportedMaskStripsTopByteToo) {
  // With the kernel's NT_ARM_PAC_MASK (GENMASK(54, 48)) the top byte goes
  // as well (TBI, or PAC bits of instruction addresses without TBI).
  std::unique_ptr<proc::Target> inner = Snapshot(
      kReadForeverCallRead, kStack, 0, ThreeFrames(0xa500000000000000));
  ASSERT_NE(inner, nullptr);
  WithPacMask t(std::move(inner),
                arch::PacMask{0x007f000000000000, 0x007f000000000000});
  std::string stop;
  EXPECT_EQ(Pcs(t, &stop),
            (std::vector<uint64_t>{kReadForeverCallRead, kInReaderMiddle,
                                   kInReader}));
}

TEST_F(PacUnwindTest, EpilogueReturnAddressInRegister) {
  // At autiasp, x30 was reloaded and is still signed (ra_signed holds until
  // the negate_ra_state after autiasp); at ret it is authenticated. Either
  // way the caller is ReaderMiddle. The frame is gone: sp is ReaderMiddle's.
  std::vector<uint8_t> stack = ThreeFrames(0);
  for (uint64_t pc : {kReadForeverAutiasp, kReadForeverRet}) {
    const uint64_t x30 =
        pc == kReadForeverAutiasp ? Sign(kInReaderMiddle, 0x61) : kInReaderMiddle;
    std::unique_ptr<proc::Target> t = Snapshot(pc, kStack + 48, x30, stack);
    ASSERT_NE(t, nullptr);
    std::string stop;
    EXPECT_EQ(Pcs(*t, &stop),
              (std::vector<uint64_t>{pc, kInReaderMiddle, kInReader}))
        << std::hex << pc;
    EXPECT_EQ(stop, "end_of_stack");
  }
}

}  // namespace
}  // namespace unwindd
