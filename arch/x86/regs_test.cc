#include "arch/x86/regs.h"

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "arch/arch.h"
#include "gtest/gtest.h"

#if defined(__i386__)
#include <sys/user.h>

#include <cstddef>
#endif

namespace unwindd::arch::x86 {
namespace {

#if defined(__i386__)
static_assert(sizeof(user_regs_struct) == kUserRegsSize);
static_assert(offsetof(user_regs_struct, ebx) == kUserEbx);
static_assert(offsetof(user_regs_struct, eax) == kUserEax);
static_assert(offsetof(user_regs_struct, eip) == kUserEip);
static_assert(offsetof(user_regs_struct, esp) == kUserEsp);
static_assert(offsetof(user_regs_struct, xss) == kUserXss);
#endif

// Slot i (4 bytes) holds 0xc0de0000 + i, little-endian.
std::vector<uint8_t> Synthetic(size_t size = kUserRegsSize) {
  std::vector<uint8_t> b(size, 0xee);
  for (size_t slot = 0; slot * 4 + 4 <= size && slot < 17; ++slot) {
    uint32_t v = 0xc0de0000 + slot;
    for (int i = 0; i < 4; ++i) b[slot * 4 + i] = (v >> (8 * i)) & 0xff;
  }
  return b;
}

uint64_t Slot(size_t offset) { return 0xc0de0000 + offset / 4; }

TEST(RegistersFromUserRegsTest, MapsToDwarfNumbers) {
  absl::StatusOr<RegisterSet> regs = RegistersFromUserRegs(Synthetic());
  ASSERT_TRUE(regs.ok()) << regs.status();
  EXPECT_EQ(regs->arch(), Arch::kX86);
  // ebx, ecx, edx, esi, edi, ebp, eax, ..., eip (12), ..., esp (15).
  EXPECT_EQ(regs->Get(kEax), Slot(kUserEax));
  EXPECT_EQ(regs->Get(kEax), 0xc0de0006u);
  EXPECT_EQ(regs->Get(kEcx), 0xc0de0001u);
  EXPECT_EQ(regs->Get(kEdx), 0xc0de0002u);
  EXPECT_EQ(regs->Get(kEbx), 0xc0de0000u);
  EXPECT_EQ(regs->Get(kEsp), 0xc0de000fu);
  EXPECT_EQ(regs->Get(kEbp), 0xc0de0005u);
  EXPECT_EQ(regs->Get(kEsi), 0xc0de0003u);
  EXPECT_EQ(regs->Get(kEdi), 0xc0de0004u);
  EXPECT_EQ(regs->Get(kEip), 0xc0de000cu);
  EXPECT_EQ(regs->pc(), 0xc0de000cu);
  EXPECT_EQ(regs->sp(), 0xc0de000fu);
  for (int r = 0; r <= 8; ++r) EXPECT_TRUE(regs->Valid(r)) << r;
  EXPECT_FALSE(regs->Valid(9));
}

TEST(RegistersFromUserRegsTest, RolesMatchArchInfo) {
  const ArchInfo& info = GetArchInfo(Arch::kX86);
  EXPECT_EQ(info.sp, kEsp);
  EXPECT_EQ(info.fp, kEbp);
  EXPECT_EQ(info.pc, kEip);
  EXPECT_EQ(info.ra, kEip);
  EXPECT_EQ(info.address_size, 4);
  const char* names[] = {"eax", "ecx", "edx", "ebx", "esp",
                         "ebp", "esi", "edi", "eip"};
  for (int r = 0; r <= 8; ++r) EXPECT_EQ(RegisterName(Arch::kX86, r), names[r]);
}

TEST(RegistersFromUserRegsTest, ValuesAreThirtyTwoBit) {
  RegisterSet regs(Arch::kX86);
  regs.Set(kEsp, 0x1234567890);
  EXPECT_EQ(regs.sp(), 0x34567890u);
}

TEST(RegistersFromUserRegsTest, TooShortIsDataLoss) {
  // 64-bit x86_64 callers would hand 216 bytes; anything below 68 is short.
  for (size_t size : {size_t{0}, size_t{4}, kUserRegsSize - 1}) {
    absl::StatusOr<RegisterSet> regs = RegistersFromUserRegs(Synthetic(size));
    ASSERT_FALSE(regs.ok()) << size;
    EXPECT_EQ(regs.status().code(), absl::StatusCode::kDataLoss);
  }
}

}  // namespace
}  // namespace unwindd::arch::x86
