#include "arch/aarch64/regs.h"

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "arch/arch.h"
#include "gtest/gtest.h"

#if defined(__aarch64__)
#include <asm/ptrace.h>

#include <cstddef>
#endif

namespace unwindd::arch::aarch64 {
namespace {

#if defined(__aarch64__)
static_assert(sizeof(user_pt_regs) == kUserPtRegsSize);
static_assert(offsetof(user_pt_regs, sp) == kSpOffset);
static_assert(offsetof(user_pt_regs, pc) == kPcOffset);
static_assert(offsetof(user_pt_regs, pstate) == kPstateOffset);
#endif

// Slot i holds 0xa000000000000000 + i, little-endian.
std::vector<uint8_t> Synthetic(size_t size = kUserPtRegsSize) {
  std::vector<uint8_t> b(size, 0xee);
  for (size_t slot = 0; slot * 8 + 8 <= size && slot < 34; ++slot) {
    uint64_t v = 0xa000000000000000 + slot;
    for (int i = 0; i < 8; ++i) b[slot * 8 + i] = (v >> (8 * i)) & 0xff;
  }
  return b;
}

TEST(RegistersFromUserPtRegsTest, MapsToDwarfNumbers) {
  absl::StatusOr<RegisterSet> regs = RegistersFromUserPtRegs(Synthetic());
  ASSERT_TRUE(regs.ok()) << regs.status();
  EXPECT_EQ(regs->arch(), Arch::kAArch64);
  for (int r = 0; r <= 30; ++r) {
    EXPECT_EQ(regs->Get(r), 0xa000000000000000 + r) << "x" << r;
  }
  EXPECT_EQ(regs->Get(kSp), 0xa000000000000000 + 31);
  EXPECT_EQ(regs->sp(), 0xa000000000000000 + 31);
  EXPECT_EQ(regs->pc(), 0xa000000000000000 + 32);
  EXPECT_EQ(regs->Get(kPc), regs->pc());
  // pstate is not a DWARF register we track; RA_SIGN_STATE (34) is not in
  // the regset at all.
  EXPECT_FALSE(regs->Valid(33));
  EXPECT_FALSE(regs->Valid(34));
}

TEST(RegistersFromUserPtRegsTest, RolesMatchArchInfo) {
  const ArchInfo& info = GetArchInfo(Arch::kAArch64);
  EXPECT_EQ(info.sp, kSp);
  EXPECT_EQ(info.pc, kPc);
  EXPECT_EQ(info.ra, kLr);
  EXPECT_EQ(info.fp, kFp);
  EXPECT_EQ(info.address_size, 8);
  EXPECT_EQ(RegisterName(Arch::kAArch64, kFp), "x29");
  EXPECT_EQ(RegisterName(Arch::kAArch64, kLr), "x30");
  EXPECT_EQ(RegisterName(Arch::kAArch64, kSp), "sp");
}

TEST(RegistersFromUserPtRegsTest, TrailingBytesIgnored) {
  absl::StatusOr<RegisterSet> regs =
      RegistersFromUserPtRegs(Synthetic(kUserPtRegsSize + 24));
  ASSERT_TRUE(regs.ok());
  EXPECT_EQ(regs->pc(), 0xa000000000000000 + 32);
}

TEST(RegistersFromUserPtRegsTest, TooShortIsDataLoss) {
  for (size_t size : {size_t{0}, size_t{8}, kUserPtRegsSize - 1}) {
    absl::StatusOr<RegisterSet> regs = RegistersFromUserPtRegs(Synthetic(size));
    ASSERT_FALSE(regs.ok()) << size;
    EXPECT_EQ(regs.status().code(), absl::StatusCode::kDataLoss);
  }
}

}  // namespace
}  // namespace unwindd::arch::aarch64
