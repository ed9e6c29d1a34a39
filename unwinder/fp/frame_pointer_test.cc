// The frame-pointer row of each ABI applied to hand-made stacks, and the
// checks that refuse frame pointers outside the stack, misaligned, or below
// sp.
#include "unwinder/fp/frame_pointer.h"

#include "gtest/gtest.h"
#include "memory/testing/map_memory.h"
#include "unwinder/cfi/apply.h"

namespace unwindd::unwinder::fp {
namespace {

using Verdict = FrameRecordCheck::Verdict;

using arch::Arch;

TEST(FramePointerTest, RowsPerAbi) {
  Row x64 = FramePointerRow(Arch::kX86_64);
  EXPECT_EQ(x64.cfa.reg, 6);
  EXPECT_EQ(x64.cfa.offset, 16);
  EXPECT_EQ(x64.return_address_register, 16);
  EXPECT_EQ(x64.regs[16].value, -8);
  EXPECT_EQ(x64.regs[6].value, -16);
  Row x86 = FramePointerRow(Arch::kX86);
  EXPECT_EQ(x86.cfa.reg, 5);
  EXPECT_EQ(x86.cfa.offset, 8);
  EXPECT_EQ(x86.regs[8].value, -4);
  EXPECT_EQ(x86.regs[5].value, -8);
  Row a64 = FramePointerRow(Arch::kAArch64);
  EXPECT_EQ(a64.cfa.reg, 29);
  EXPECT_EQ(a64.cfa.offset, 16);
  EXPECT_EQ(a64.return_address_register, 30);
  EXPECT_EQ(a64.regs[30].value, -8);  // {x29, x30} at x29
  EXPECT_EQ(a64.regs[29].value, -16);
}

TEST(FramePointerTest, WalksAnX86_64Chain) {
  memory::testing::MapMemory m;
  const uint64_t rbp1 = 0x7ffd1000, rbp2 = 0x7ffd1040;
  m.PutLe(rbp1, rbp2, 8);
  m.PutLe(rbp1 + 8, 0x401111, 8);
  arch::RegisterSet regs(Arch::kX86_64);
  regs.set_sp(0x7ffd0ff0);
  regs.set_pc(0x401000);
  regs.Set(6, rbp1);
  const StackBounds stack{0x7ffd0000, 0x7ffd2000, true};
  ASSERT_EQ(CheckFrameRecord(regs, stack).verdict, Verdict::kRecord);
  absl::StatusOr<ApplyResult> r =
      ApplyRow(FramePointerRow(Arch::kX86_64), regs, m, 0);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->cfa, rbp1 + 16);
  EXPECT_EQ(r->caller.pc(), 0x401111u);
  EXPECT_EQ(r->caller.sp(), rbp1 + 16);
  EXPECT_EQ(r->caller.Get(6), rbp2);
}

TEST(FramePointerTest, WalksAnAArch64Record) {
  memory::testing::MapMemory m;
  const uint64_t fp = 0xffffc000;
  m.PutLe(fp, 0xffffc100, 8);    // saved x29
  m.PutLe(fp + 8, 0x400abc, 8);  // saved x30
  arch::RegisterSet regs(Arch::kAArch64);
  regs.set_sp(fp - 32);
  regs.Set(29, fp);
  regs.Set(30, 0x400000);  // the callee's own LR: not the caller's pc
  absl::StatusOr<ApplyResult> r =
      ApplyRow(FramePointerRow(Arch::kAArch64), regs, m, 0);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->caller.pc(), 0x400abcu);
  EXPECT_EQ(r->caller.Get(29), 0xffffc100u);
}

TEST(FramePointerTest, Checks) {
  const StackBounds stack{0x7ffd0000, 0x7ffd2000, true};
  arch::RegisterSet regs(Arch::kX86_64);
  regs.set_sp(0x7ffd1000);
  EXPECT_EQ(CheckFrameRecord(regs, stack).verdict, Verdict::kNoRecord);  // no rbp
  regs.Set(6, 0);
  EXPECT_EQ(CheckFrameRecord(regs, stack).verdict, Verdict::kEndOfChain);  // end of chain
  regs.Set(6, 0x7ffd1003);
  EXPECT_EQ(CheckFrameRecord(regs, stack).verdict, Verdict::kNoRecord);  // misaligned
  regs.Set(6, 0x7ffd0ff8);
  EXPECT_EQ(CheckFrameRecord(regs, stack).verdict, Verdict::kNoRecord);  // below sp
  regs.Set(6, 0x7ffd1ff8);
  EXPECT_EQ(CheckFrameRecord(regs, stack).verdict, Verdict::kNoRecord);  // record leaves
  regs.Set(6, 0x7ffe0000);
  EXPECT_EQ(CheckFrameRecord(regs, stack).verdict, Verdict::kNoRecord);  // another mapping
  regs.Set(6, 0x7ffd1ff0);
  EXPECT_EQ(CheckFrameRecord(regs, stack).verdict, Verdict::kRecord);
  regs.Set(6, 0x7ffd1000);  // == sp: a frame with no locals
  EXPECT_EQ(CheckFrameRecord(regs, stack).verdict, Verdict::kRecord);
}

TEST(FramePointerTest, StackBoundsFromTheMappingThatHoldsSp) {
  std::vector<proc::Mapping> maps(3);
  maps[0].start = 0x400000, maps[0].end = 0x401000;
  maps[1].start = 0x7f0000000000,
  maps[1].end = 0x7f0000800000;  // a thread stack
  maps[2].start = 0x7ffd0000, maps[2].end = 0x7ffff000,
  maps[2].path = "[stack]";
  StackBounds b = StackBoundsFor(maps, 0x7f0000400000);
  EXPECT_TRUE(b.known);
  EXPECT_EQ(b.lo, 0x7f0000000000u);
  EXPECT_EQ(b.hi, 0x7f0000800000u);
  b = StackBoundsFor(maps, 0x7ffe0000);
  EXPECT_EQ(b.hi, 0x7ffff000u);
  // No mapping: sp up to a bounded span, never wrapping.
  b = StackBoundsFor(maps, 0x1000);
  EXPECT_FALSE(b.known);
  EXPECT_EQ(b.lo, 0x1000u);
  EXPECT_EQ(b.hi, 0x1000 + kMaxUnmappedStackSpan);
  b = StackBoundsFor({}, ~uint64_t{0} - 8);
  EXPECT_EQ(b.hi, ~uint64_t{0});
}

}  // namespace
}  // namespace unwindd::unwinder::fp
