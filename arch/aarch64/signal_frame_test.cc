#include "arch/aarch64/signal_frame.h"

#include "arch/aarch64/regs.h"
#include "gtest/gtest.h"
#include "memory/testing/map_memory.h"

namespace unwindd::arch::aarch64 {
namespace {

constexpr uint64_t kTramp = 0x5500001000;
constexpr uint64_t kFrame = 0x7ffff000;  // sp at the trampoline

TEST(SignalFrameTest, RecognisesBothInstructions) {
  memory::testing::MapMemory m;
  m.PutLe(kTramp - 4, 0xd503201f, 4);  // nop (the vDSO's bti/nop slot)
  m.PutLe(kTramp, kMovX8Rt, 4);
  m.PutLe(kTramp + 4, kSvc0, 4);
  m.PutLe(kTramp + 8, 0xd503201f, 4);
  EXPECT_TRUE(IsSigreturnTrampoline(m, kTramp));
  EXPECT_TRUE(IsSigreturnTrampoline(m, kTramp + 4));
  EXPECT_FALSE(IsSigreturnTrampoline(m, kTramp - 4));
  EXPECT_FALSE(IsSigreturnTrampoline(m, kTramp + 8));
  EXPECT_FALSE(IsSigreturnTrampoline(m, 0));
  EXPECT_FALSE(IsSigreturnTrampoline(m, 2));
}

TEST(SignalFrameTest, OtherSyscallIsNotTrampoline) {
  memory::testing::MapMemory m;
  m.PutLe(kTramp, 0xd2800ba8, 4);  // mov x8, #93 (exit)
  m.PutLe(kTramp + 4, kSvc0, 4);
  EXPECT_FALSE(IsSigreturnTrampoline(m, kTramp));
  memory::testing::MapMemory half;
  half.PutLe(kTramp, kMovX8Rt, 4);  // the svc is unreadable
  EXPECT_FALSE(IsSigreturnTrampoline(half, kTramp));
}

TEST(SignalFrameTest, RestoresFromSigcontext) {
  memory::testing::MapMemory m;
  // rt_sigframe: siginfo (128), ucontext: sigcontext at +176:
  // fault_address, regs[31], sp, pc, pstate.
  const uint64_t sc = kFrame + 128 + 176;
  m.PutLe(sc, 0xdead, 8);  // fault_address
  for (int i = 0; i < 31; ++i) m.PutLe(sc + 8 + i * 8, 0x1000 + i, 8);
  m.PutLe(sc + 8 + 31 * 8, 0x7fff0000, 8);     // sp
  m.PutLe(sc + 8 + 32 * 8, 0x5500002344, 8);   // pc
  m.PutLe(sc + 8 + 33 * 8, 0x60000000, 8);     // pstate
  absl::StatusOr<RegisterSet> regs = RestoreFromSigframe(m, kFrame);
  ASSERT_TRUE(regs.ok()) << regs.status();
  EXPECT_EQ(regs->arch(), Arch::kAArch64);
  for (int i = 0; i < 31; ++i) EXPECT_EQ(regs->Get(i), 0x1000u + i) << i;
  EXPECT_EQ(regs->sp(), 0x7fff0000u);
  EXPECT_EQ(regs->pc(), 0x5500002344u);
  EXPECT_FALSE(regs->Valid(33));
}

TEST(SignalFrameTest, UnreadableFrameIsOutOfRange) {
  memory::testing::MapMemory m;
  for (int i = 0; i < 20; ++i) m.PutLe(kFrame + 304 + i * 8, i, 8);
  EXPECT_TRUE(absl::IsOutOfRange(RestoreFromSigframe(m, kFrame).status()));
  EXPECT_TRUE(
      absl::IsOutOfRange(RestoreFromSigframe(m, ~uint64_t{0} - 100).status()));
}

}  // namespace
}  // namespace unwindd::arch::aarch64
