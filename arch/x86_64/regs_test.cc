#include "arch/x86_64/regs.h"

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "arch/arch.h"
#include "gtest/gtest.h"

#if defined(__x86_64__)
#include <sys/user.h>

#include <cstddef>
#endif

namespace unwindd::arch::x86_64 {
namespace {

#if defined(__x86_64__)
// On an x86_64 host, the explicit offsets must match the system header.
static_assert(sizeof(user_regs_struct) == kUserRegsSize);
static_assert(offsetof(user_regs_struct, r15) == kR15);
static_assert(offsetof(user_regs_struct, rbp) == kRbp);
static_assert(offsetof(user_regs_struct, rbx) == kRbx);
static_assert(offsetof(user_regs_struct, r8) == kR8);
static_assert(offsetof(user_regs_struct, rax) == kRax);
static_assert(offsetof(user_regs_struct, rcx) == kRcx);
static_assert(offsetof(user_regs_struct, rdx) == kRdx);
static_assert(offsetof(user_regs_struct, rsi) == kRsi);
static_assert(offsetof(user_regs_struct, rdi) == kRdi);
static_assert(offsetof(user_regs_struct, orig_rax) == kOrigRax);
static_assert(offsetof(user_regs_struct, rip) == kRip);
static_assert(offsetof(user_regs_struct, eflags) == kEflags);
static_assert(offsetof(user_regs_struct, rsp) == kRsp);
static_assert(offsetof(user_regs_struct, fs_base) == kFsBase);
static_assert(offsetof(user_regs_struct, gs) == kGs);
#endif

// Slot i holds 0x1111111111111100 + i, little-endian.
std::vector<uint8_t> Synthetic(size_t size = kUserRegsSize) {
  std::vector<uint8_t> b(size, 0xee);
  for (size_t slot = 0; slot < 27 && slot * 8 + 8 <= size; ++slot) {
    uint64_t v = 0x1111111111111100 + slot;
    for (int i = 0; i < 8; ++i) b[slot * 8 + i] = (v >> (8 * i)) & 0xff;
  }
  return b;
}

uint64_t Slot(size_t offset) { return 0x1111111111111100 + offset / 8; }

TEST(RegistersFromUserRegsTest, MapsToDwarfNumbers) {
  std::vector<uint8_t> b = Synthetic();
  absl::StatusOr<RegisterSet> regs = RegistersFromUserRegs(b);
  ASSERT_TRUE(regs.ok()) << regs.status();
  EXPECT_EQ(regs->arch(), Arch::kX86_64);
  EXPECT_EQ(regs->Get(0), Slot(kRax));
  EXPECT_EQ(regs->Get(1), Slot(kRdx));
  EXPECT_EQ(regs->Get(2), Slot(kRcx));
  EXPECT_EQ(regs->Get(3), Slot(kRbx));
  EXPECT_EQ(regs->Get(4), Slot(kRsi));
  EXPECT_EQ(regs->Get(5), Slot(kRdi));
  EXPECT_EQ(regs->Get(6), Slot(kRbp));
  EXPECT_EQ(regs->Get(7), Slot(kRsp));
  EXPECT_EQ(regs->Get(8), Slot(kR8));
  EXPECT_EQ(regs->Get(9), Slot(kR9));
  EXPECT_EQ(regs->Get(10), Slot(kR10));
  EXPECT_EQ(regs->Get(11), Slot(kR11));
  EXPECT_EQ(regs->Get(12), Slot(kR12));
  EXPECT_EQ(regs->Get(13), Slot(kR13));
  EXPECT_EQ(regs->Get(14), Slot(kR14));
  EXPECT_EQ(regs->Get(15), Slot(kR15));
  EXPECT_EQ(regs->Get(16), Slot(kRip));
  EXPECT_EQ(regs->pc(), Slot(kRip));
  EXPECT_EQ(regs->sp(), Slot(kRsp));
  for (int r = 0; r <= 16; ++r) EXPECT_TRUE(regs->Valid(r)) << r;
  EXPECT_FALSE(regs->Valid(17));
}

TEST(RegistersFromUserRegsTest, ReadsLittleEndianBytes) {
  std::vector<uint8_t> b(kUserRegsSize, 0);
  for (int i = 0; i < 8; ++i) b[kRip + i] = static_cast<uint8_t>(i + 1);
  absl::StatusOr<RegisterSet> regs = RegistersFromUserRegs(b);
  ASSERT_TRUE(regs.ok());
  EXPECT_EQ(regs->pc(), 0x0807060504030201u);
}

TEST(RegistersFromUserRegsTest, TrailingBytesIgnored) {
  absl::StatusOr<RegisterSet> regs =
      RegistersFromUserRegs(Synthetic(kUserRegsSize + 40));
  ASSERT_TRUE(regs.ok());
  EXPECT_EQ(regs->pc(), Slot(kRip));
}

TEST(RegistersFromUserRegsTest, TooShortIsDataLoss) {
  for (size_t size : {size_t{0}, size_t{8}, kUserRegsSize - 1}) {
    absl::StatusOr<RegisterSet> regs = RegistersFromUserRegs(Synthetic(size));
    ASSERT_FALSE(regs.ok()) << size;
    EXPECT_EQ(regs.status().code(), absl::StatusCode::kDataLoss);
  }
}

}  // namespace
}  // namespace unwindd::arch::x86_64
