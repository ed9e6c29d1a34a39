#include "arch/pac.h"

#include <vector>

#include "arch/aarch64/pac.h"
#include "gtest/gtest.h"

namespace unwindd::arch {
namespace {

// A return address as paciasp leaves it with 48-bit VA: PAC in 54..48 and
// (instruction pointers have no TBI) 63..56.
constexpr uint64_t kAddr = 0x0000aaaad5e01234;
constexpr uint64_t kSigned = 0x3a1baaaad5e01234;

TEST(PacMaskTest, FromUserPacMask) {
  std::vector<uint8_t> b(16);
  const uint64_t data = 0x007f000000000000, insn = 0x007f000000000000;
  for (int i = 0; i < 8; ++i) {
    b[i] = (data >> (8 * i)) & 0xff;
    b[8 + i] = (insn >> (8 * i)) & 0xff;
  }
  absl::StatusOr<PacMask> m = aarch64::PacMaskFromUserPacMask(b);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->data_mask, data);
  EXPECT_EQ(m->insn_mask, insn);
  EXPECT_TRUE(absl::IsDataLoss(
      aarch64::PacMaskFromUserPacMask(std::vector<uint8_t>(15)).status()));
}

TEST(PacMaskTest, NonAddressBitsFromVaBits) {
  EXPECT_EQ(aarch64::NonAddressBits(48), 0xffff000000000000u);
  EXPECT_EQ(aarch64::NonAddressBits(52), 0xfff0000000000000u);
  EXPECT_EQ(aarch64::NonAddressBits(39), 0xffffff8000000000u);
  EXPECT_EQ(aarch64::NonAddressBits(0), 0xffffffff00000000u);  // clamped
  EXPECT_EQ(aarch64::NonAddressBits(99), 0xff00000000000000u);
}

TEST(PacMaskTest, CodeAddressMaskPerArch) {
  // Unknown mask on aarch64: everything above a 48-bit address space.
  EXPECT_EQ(CodeAddressMask(Arch::kAArch64, std::nullopt), 0xffff000000000000u);
  // The kernel's GENMASK(54, 48) plus the top byte.
  EXPECT_EQ(CodeAddressMask(Arch::kAArch64,
                            PacMask{0x007f000000000000, 0x007f000000000000}),
            0xff7f000000000000u);
  // 52-bit VA: bits 48..51 are address bits, not PAC.
  EXPECT_EQ(CodeAddressMask(Arch::kAArch64,
                            PacMask{0x0070000000000000, 0x0070000000000000}),
            0xff70000000000000u);
  // A zero mask (PAC not enabled) is "unknown".
  EXPECT_EQ(CodeAddressMask(Arch::kAArch64, PacMask{}), 0xffff000000000000u);
  EXPECT_EQ(CodeAddressMask(Arch::kX86_64, PacMask{1, 1}), 0u);
  EXPECT_EQ(CodeAddressMask(Arch::kX86, std::nullopt), 0u);
}

TEST(StripCodeAddressTest, UserAddresses) {
  const uint64_t mask = CodeAddressMask(Arch::kAArch64, std::nullopt);
  EXPECT_EQ(StripCodeAddress(Arch::kAArch64, kSigned, mask), kAddr);
  EXPECT_EQ(StripCodeAddress(Arch::kAArch64, kAddr, mask), kAddr);
  // With the kernel-reported mask.
  const uint64_t reported = CodeAddressMask(
      Arch::kAArch64, PacMask{0x007f000000000000, 0x007f000000000000});
  EXPECT_EQ(StripCodeAddress(Arch::kAArch64, kSigned, reported), kAddr);
  // 52-bit VA: address bits 48..51 survive.
  const uint64_t va52 = CodeAddressMask(
      Arch::kAArch64, PacMask{0x0070000000000000, 0x0070000000000000});
  EXPECT_EQ(StripCodeAddress(Arch::kAArch64, 0x3a7badaad5e01234, va52),
            0x000badaad5e01234u);
}

TEST(StripCodeAddressTest, Bit55SelectsTheKernelHalf) {
  const uint64_t mask = CodeAddressMask(Arch::kAArch64, std::nullopt);
  // Bit 55 set: a TTBR1 (kernel) address; the masked bits become ones.
  EXPECT_EQ(StripCodeAddress(Arch::kAArch64, 0x12bf800012345678, mask),
            0xffff800012345678u);
  EXPECT_EQ(StripCodeAddress(Arch::kAArch64, 0xffff800012345678, mask),
            0xffff800012345678u);
}

TEST(StripCodeAddressTest, OtherArchesUnchanged) {
  EXPECT_EQ(StripCodeAddress(Arch::kX86_64, kSigned,
                             CodeAddressMask(Arch::kX86_64, std::nullopt)),
            kSigned);
  EXPECT_EQ(StripCodeAddress(Arch::kX86_64, kSigned, 0xffff000000000000),
            kSigned);
  EXPECT_EQ(StripCodeAddress(Arch::kAArch64, kSigned, 0), kSigned);
}

}  // namespace
}  // namespace unwindd::arch
