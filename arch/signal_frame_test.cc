// The dispatch: each arch's trampoline is recognised only for that arch,
// and the restore reads that arch's layout.
#include "arch/signal_frame.h"

#include "gtest/gtest.h"
#include "memory/testing/map_memory.h"

namespace unwindd::arch {
namespace {

constexpr uint64_t kCode = 0x10000;
constexpr uint64_t kStack = 0x20000;

FrameAddress Ip(uint64_t pc) { return FrameAddress::InstructionPointer(pc); }

// The registers a signal frame restores, for a thread stopped at `regs`.
absl::StatusOr<RegisterSet> Restore(memory::Memory& m, const RegisterSet& regs) {
  return RestoreFromSigframe(m, m, regs, Ip(regs.pc()));
}

RegisterSet At(Arch a, uint64_t pc, uint64_t sp) {
  RegisterSet r(a);
  r.set_pc(pc);
  r.set_sp(sp);
  return r;
}

TEST(SignalFrameDispatchTest, TrampolinesArePerArch) {
  memory::testing::MapMemory x64, x86, a64;
  x64.Put(kCode, {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05});
  x86.Put(kCode, {0xb8, 0xad, 0x00, 0x00, 0x00, 0xcd, 0x80});
  a64.PutLe(kCode, 0xd2801168, 4);
  a64.PutLe(kCode + 4, 0xd4000001, 4);
  EXPECT_TRUE(IsSigreturnTrampoline(Arch::kX86_64, x64, Ip(kCode)));
  EXPECT_TRUE(IsSigreturnTrampoline(Arch::kX86, x86, Ip(kCode)));
  EXPECT_TRUE(IsSigreturnTrampoline(Arch::kAArch64, a64, Ip(kCode)));
  for (Arch a : {Arch::kX86_64, Arch::kX86, Arch::kAArch64}) {
    EXPECT_EQ(IsSigreturnTrampoline(a, x64, Ip(kCode)), a == Arch::kX86_64);
    EXPECT_EQ(IsSigreturnTrampoline(a, x86, Ip(kCode)), a == Arch::kX86);
    EXPECT_EQ(IsSigreturnTrampoline(a, a64, Ip(kCode)), a == Arch::kAArch64);
  }
}

TEST(SignalFrameDispatchTest, RestoresEachLayout) {
  // x86_64: sigcontext at sp + 40; rip is slot 16, rsp slot 15.
  memory::testing::MapMemory x64;
  x64.Put(kCode, {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05});
  for (int i = 0; i < 17; ++i) x64.PutLe(kStack + 40 + i * 8, 0x100 + i, 8);
  absl::StatusOr<RegisterSet> r = Restore(x64, At(Arch::kX86_64, kCode, kStack));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->arch(), Arch::kX86_64);
  EXPECT_EQ(r->pc(), 0x110u);
  EXPECT_EQ(r->sp(), 0x10fu);

  // aarch64: sigcontext at sp + 304; regs[0] at +8, sp at +256, pc at +264.
  memory::testing::MapMemory a64;
  a64.PutLe(kCode, 0xd2801168, 4);
  a64.PutLe(kCode + 4, 0xd4000001, 4);
  for (int i = 0; i < 34; ++i) a64.PutLe(kStack + 304 + i * 8, 0x200 + i, 8);
  r = Restore(a64, At(Arch::kAArch64, kCode + 4, kStack));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->arch(), Arch::kAArch64);
  EXPECT_EQ(r->Get(0), 0x201u);
  EXPECT_EQ(r->Get(30), 0x21fu);
  EXPECT_EQ(r->sp(), 0x220u);
  EXPECT_EQ(r->pc(), 0x221u);

  // i386 rt: puc at sp + 8, sigcontext at puc + 20, eip at +56, esp at +28.
  memory::testing::MapMemory x86;
  x86.Put(kCode, {0xb8, 0xad, 0x00, 0x00, 0x00, 0xcd, 0x80});
  x86.PutLe(kStack + 8, kStack + 0x100, 4);
  for (int i = 0; i < 20; ++i) x86.PutLe(kStack + 0x114 + i * 4, 0x300 + i, 4);
  r = Restore(x86, At(Arch::kX86, kCode, kStack));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->arch(), Arch::kX86);
  EXPECT_EQ(r->pc(), 0x30eu);
  EXPECT_EQ(r->sp(), 0x307u);
}

TEST(SignalFrameDispatchTest, NotATrampolineIsNotFound) {
  memory::testing::MapMemory m;
  m.Put(kCode, {0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90});
  for (Arch a : {Arch::kX86_64, Arch::kX86, Arch::kAArch64}) {
    EXPECT_TRUE(absl::IsNotFound(
        Restore(m, At(a, kCode, kStack)).status()));
  }
}

}  // namespace
}  // namespace unwindd::arch
