#include "arch/x86/signal_frame.h"

#include <vector>

#include "arch/x86/regs.h"
#include "gtest/gtest.h"
#include "memory/testing/map_memory.h"

namespace unwindd::arch::x86 {
namespace {

constexpr uint64_t kSigreturn = 0xf7fc1590;    // like the vDSO's
constexpr uint64_t kRtSigreturn = 0xf7fc15a0;
constexpr uint64_t kSp = 0xffffd000;            // at `sig`

const std::vector<uint8_t> kSigreturnCode = {0x58, 0xb8, 0x77, 0x00,
                                             0x00, 0x00, 0xcd, 0x80};
const std::vector<uint8_t> kRtSigreturnCode = {0xb8, 0xad, 0x00, 0x00,
                                               0x00, 0xcd, 0x80};

memory::testing::MapMemory Trampolines() {
  memory::testing::MapMemory m;
  m.Put(kSigreturn, kSigreturnCode);
  m.Put(kRtSigreturn, kRtSigreturnCode);
  return m;
}

// sigcontext_32 at `sc`: gs/fs/es/ds, then edi .. eax = 0x100 + slot,
// trapno, err, eip = 0x08049999.
void PutSigcontext(memory::testing::MapMemory& m, uint64_t sc) {
  for (int i = 0; i < 4; ++i) m.PutLe(sc + i * 4, 0x2b, 4);
  for (int i = 0; i < 8; ++i) m.PutLe(sc + 16 + i * 4, 0x100 + i, 4);
  m.PutLe(sc + 48, 14, 4);  // trapno
  m.PutLe(sc + 52, 0, 4);   // err
  m.PutLe(sc + 56, 0x08049999, 4);
}

void ExpectRestored(const absl::StatusOr<RegisterSet>& regs) {
  ASSERT_TRUE(regs.ok()) << regs.status();
  EXPECT_EQ(regs->arch(), Arch::kX86);
  EXPECT_EQ(regs->Get(kEdi), 0x100u);
  EXPECT_EQ(regs->Get(kEsi), 0x101u);
  EXPECT_EQ(regs->Get(kEbp), 0x102u);
  EXPECT_EQ(regs->Get(kEsp), 0x103u);
  EXPECT_EQ(regs->Get(kEbx), 0x104u);
  EXPECT_EQ(regs->Get(kEdx), 0x105u);
  EXPECT_EQ(regs->Get(kEcx), 0x106u);
  EXPECT_EQ(regs->Get(kEax), 0x107u);
  EXPECT_EQ(regs->pc(), 0x08049999u);
}

RegisterSet At(uint64_t pc, uint64_t sp) {
  RegisterSet r(Arch::kX86);
  r.set_pc(pc);
  r.set_sp(sp);
  return r;
}

TEST(X86SignalFrameTest, FindsTrampolinesAtEveryInstruction) {
  memory::testing::MapMemory m = Trampolines();
  for (int off : {0, 1, 6}) {
    Trampoline t = FindTrampoline(m, kSigreturn + off);
    EXPECT_EQ(t.kind, TrampolineKind::kSigreturn) << off;
    EXPECT_EQ(t.offset, off);
  }
  for (int off : {0, 5}) {
    Trampoline t = FindTrampoline(m, kRtSigreturn + off);
    EXPECT_EQ(t.kind, TrampolineKind::kRtSigreturn) << off;
    EXPECT_EQ(t.offset, off);
  }
  // Not instruction boundaries, or not the code.
  for (uint64_t pc : {kSigreturn + 2, kSigreturn + 7, kRtSigreturn + 1,
                      kRtSigreturn + 6, uint64_t{0}, uint64_t{3}}) {
    EXPECT_FALSE(IsSigreturnTrampoline(m, pc)) << std::hex << pc;
  }
}

TEST(X86SignalFrameTest, OtherSyscallIsNotTrampoline) {
  memory::testing::MapMemory m;
  m.Put(kRtSigreturn, {0xb8, 0x01, 0x00, 0x00, 0x00, 0xcd, 0x80});  // exit
  EXPECT_FALSE(IsSigreturnTrampoline(m, kRtSigreturn));
}

TEST(X86SignalFrameTest, SigreturnBeforePop) {
  memory::testing::MapMemory m = Trampolines();
  m.PutLe(kSp, 10, 4);  // sig
  PutSigcontext(m, kSp + 4);
  ExpectRestored(RestoreFromSigframe(m, m, At(kSigreturn, kSp)));
}

TEST(X86SignalFrameTest, SigreturnAfterPop) {
  memory::testing::MapMemory m = Trampolines();
  PutSigcontext(m, kSp);  // `pop %eax` consumed sig
  ExpectRestored(RestoreFromSigframe(m, m, At(kSigreturn + 1, kSp)));
  ExpectRestored(RestoreFromSigframe(m, m, At(kSigreturn + 6, kSp)));
}

TEST(X86SignalFrameTest, RtSigreturnFollowsPuc) {
  memory::testing::MapMemory m = Trampolines();
  // sig, pinfo, puc, siginfo (128), ucontext at sp + 140.
  const uint64_t uc = kSp + 12 + 128;
  m.PutLe(kSp, 10, 4);
  m.PutLe(kSp + 4, kSp + 12, 4);
  m.PutLe(kSp + 8, uc, 4);
  PutSigcontext(m, uc + kUcMcontextOffset);
  ExpectRestored(RestoreFromSigframe(m, m, At(kRtSigreturn, kSp)));
  ExpectRestored(RestoreFromSigframe(m, m, At(kRtSigreturn + 5, kSp)));
}

TEST(X86SignalFrameTest, Errors) {
  memory::testing::MapMemory m = Trampolines();
  EXPECT_TRUE(absl::IsNotFound(
      RestoreFromSigframe(m, m, At(kSigreturn + 3, kSp)).status()));
  // Trampoline readable, stack not.
  EXPECT_TRUE(absl::IsOutOfRange(
      RestoreFromSigframe(m, m, At(kSigreturn, kSp)).status()));
  EXPECT_TRUE(absl::IsOutOfRange(
      RestoreFromSigframe(m, m, At(kRtSigreturn, kSp)).status()));
  // puc points near 4 GiB: the sigcontext would run past it.
  m.PutLe(kSp + 8, 0xffffffe0, 4);
  EXPECT_TRUE(absl::IsOutOfRange(
      RestoreFromSigframe(m, m, At(kRtSigreturn, kSp)).status()));
}

}  // namespace
}  // namespace unwindd::arch::x86
