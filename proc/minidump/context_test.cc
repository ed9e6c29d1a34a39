#include "proc/minidump/context.h"

#include "gtest/gtest.h"

namespace unwindd::proc::minidump {
namespace {

arch::RegisterSet Filled(arch::Arch a) {
  arch::RegisterSet regs(a);
  const arch::ArchInfo& info = arch::GetArchInfo(a);
  const int gprs = a == arch::Arch::kAArch64 ? 33 : info.num_regs;
  for (int r = 0; r < gprs; ++r) regs.Set(r, 0x1111 * (r + 1));
  return regs;
}

class ContextRoundTrip : public ::testing::TestWithParam<arch::Arch> {};

TEST_P(ContextRoundTrip, WrittenContextsReadBack) {
  const arch::RegisterSet regs = Filled(GetParam());
  const std::vector<uint8_t> bytes = WriteContext(regs);
  ASSERT_FALSE(bytes.empty());
  // With the arch known (SystemInfo) and told from the size and flags.
  for (std::optional<arch::Arch> expected : {std::optional<arch::Arch>(GetParam()),
                                             std::optional<arch::Arch>()}) {
    absl::StatusOr<arch::RegisterSet> back = ParseContext(bytes, expected);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(back->arch(), GetParam());
    const int gprs = GetParam() == arch::Arch::kAArch64 ? 33
                                                         : arch::GetArchInfo(GetParam()).num_regs;
    for (int r = 0; r < gprs; ++r) {
      EXPECT_TRUE(back->Valid(r)) << r;
      EXPECT_EQ(back->Get(r), regs.Get(r)) << "register " << r;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Archs, ContextRoundTrip,
                         ::testing::Values(arch::Arch::kX86_64, arch::Arch::kAArch64,
                                           arch::Arch::kX86));

TEST(ContextTest, SizesAreTheFormatsSizes) {
  EXPECT_EQ(WriteContext(Filled(arch::Arch::kX86_64)).size(), 1232u);
  EXPECT_EQ(WriteContext(Filled(arch::Arch::kAArch64)).size(), 912u);
  EXPECT_EQ(WriteContext(Filled(arch::Arch::kX86)).size(), 716u);
}

TEST(ContextTest, X86_64RegistersAreAtTheirContextOffsets) {
  arch::RegisterSet regs(arch::Arch::kX86_64);
  regs.Set(16, 0x401234);    // rip
  regs.Set(7, 0x7ffd1000);   // rsp
  regs.Set(6, 0x7ffd2000);   // rbp
  regs.Set(0, 0xaa);         // rax
  const std::vector<uint8_t> b = WriteContext(regs);
  // minidump_cpu_amd64.h: context_flags at 48, rax 120, rsp 152, rbp 160,
  // rip 248.
  EXPECT_EQ(LoadU32(b, 48), 0x00100003u);
  EXPECT_EQ(LoadU64(b, 120), 0xaau);
  EXPECT_EQ(LoadU64(b, 152), 0x7ffd1000u);
  EXPECT_EQ(LoadU64(b, 160), 0x7ffd2000u);
  EXPECT_EQ(LoadU64(b, 248), 0x401234u);
}

TEST(ContextTest, OnlyTheFlaggedPartsAreValid) {
  std::vector<uint8_t> b = WriteContext(Filled(arch::Arch::kX86_64));
  StoreU32(b, 48, 0x00100001);  // CONTROL only: rsp and rip
  absl::StatusOr<arch::RegisterSet> r = ParseContext(b, arch::Arch::kX86_64);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->Valid(7));
  EXPECT_TRUE(r->Valid(16));
  EXPECT_FALSE(r->Valid(0));
  EXPECT_FALSE(r->Valid(6));
}

TEST(ContextTest, AContextOfAnotherCpuOrTooShortIsDataLoss) {
  const std::vector<uint8_t> arm = WriteContext(Filled(arch::Arch::kAArch64));
  EXPECT_TRUE(absl::IsDataLoss(ParseContext(arm, arch::Arch::kX86_64).status()));
  std::vector<uint8_t> x64 = WriteContext(Filled(arch::Arch::kX86_64));
  x64.resize(100);
  EXPECT_TRUE(absl::IsDataLoss(ParseContext(x64, arch::Arch::kX86_64).status()));
  EXPECT_TRUE(absl::IsDataLoss(ParseContext({}, std::nullopt).status()));
}

TEST(ContextTest, ReadsBreakpadsOldArm64Layout) {
  // MDRawContextARM64_Old: u64 flags (bit 31), iregs[33] at 8, 796 bytes.
  std::vector<uint8_t> b(796, 0);
  StoreU64(b, 0, 0x80000006);
  for (int i = 0; i < 33; ++i) StoreU64(b, 8 + 8 * i, 0x100 + i);
  absl::StatusOr<arch::RegisterSet> r = ParseContext(b, arch::Arch::kAArch64);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->pc(), 0x100u + 32);
  EXPECT_EQ(r->sp(), 0x100u + 31);
  EXPECT_EQ(r->Get(30), 0x100u + 30);
}

TEST(ContextTest, ArchitecturesFromSystemInfo) {
  EXPECT_EQ(*ArchFromCpuArchitecture(9), arch::Arch::kX86_64);
  EXPECT_EQ(*ArchFromCpuArchitecture(12), arch::Arch::kAArch64);
  EXPECT_EQ(*ArchFromCpuArchitecture(0x8003), arch::Arch::kAArch64);
  EXPECT_EQ(*ArchFromCpuArchitecture(0), arch::Arch::kX86);
  EXPECT_TRUE(absl::IsUnimplemented(ArchFromCpuArchitecture(5).status()));  // ARM
  EXPECT_EQ(CpuArchitectureOf(arch::Arch::kAArch64), 12);
}

}  // namespace
}  // namespace unwindd::proc::minidump
