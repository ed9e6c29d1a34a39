// SFrame §2.3: the v1 (17-byte), v2 (20-byte) and v3 (index + attributes)
// FDE layouts, section- and field-relative function starts, the info bytes,
// in both byte orders; and FDEs that cannot be right.
#include "unwinder/sframe/fde.h"

#include "gtest/gtest.h"
#include "unwinder/sframe/testing/sframe_builder.h"

namespace unwindd::unwinder::sframe {
namespace {

using testing::BuildSframe;
using testing::FdeSpec;
using testing::SectionSpec;

SectionSpec TwoFunctions(uint8_t version, bool big_endian = false) {
  SectionSpec s;
  s.version = version;
  s.big_endian = big_endian;
  s.vaddr = 0x40000;
  s.fdes.push_back(FdeSpec{
      .func_start = 0x1000,
      .size = 0x30,
      .fres = {{.start = 0, .words = {8}}, {.start = 1, .words = {16}}}});
  s.fdes.push_back(FdeSpec{
      .func_start = 0x1040,
      .size = 0x40,
      .fre_type = kFreTypeAddr2,
      .pc_type = kPcTypeMask,
      .rep_size = 16,
      .pauth_key_b = true,
      .fres = {{.start = 0, .words = {8}}, {.start = 11, .words = {16}}}});
  return s;
}

struct Case {
  uint8_t version;
  uint8_t flags;
  bool big_endian;
};

class FdeLayoutTest : public ::testing::TestWithParam<Case> {};

TEST_P(FdeLayoutTest, DecodesEveryField) {
  SectionSpec s = TwoFunctions(GetParam().version, GetParam().big_endian);
  s.flags = GetParam().flags;
  std::vector<uint8_t> b = BuildSframe(s);
  absl::StatusOr<Header> h = ParseHeader(b);
  ASSERT_TRUE(h.ok()) << h.status();

  absl::StatusOr<Fde> f0 = ReadFde(b, *h, s.vaddr, 0);
  ASSERT_TRUE(f0.ok()) << f0.status();
  EXPECT_EQ(f0->func_start, 0x1000u);
  EXPECT_EQ(f0->func_size, 0x30u);
  EXPECT_EQ(f0->num_fres, 2u);
  EXPECT_EQ(f0->fre_type, kFreTypeAddr1);
  EXPECT_EQ(f0->pc_type, kPcTypeInc);
  EXPECT_FALSE(f0->pauth_key_b);
  const uint64_t attr = h->version >= kVersion3 ? kFdeAttrSizeV3 : 0;
  EXPECT_EQ(f0->fres_offset, h->fre_start + attr);

  absl::StatusOr<Fde> f1 = ReadFde(b, *h, s.vaddr, 1);
  ASSERT_TRUE(f1.ok()) << f1.status();
  EXPECT_EQ(f1->func_start, 0x1040u);
  EXPECT_EQ(f1->func_end(), 0x1080u);
  EXPECT_EQ(f1->fre_type, kFreTypeAddr2);
  EXPECT_EQ(f1->pc_type, kPcTypeMask);
  EXPECT_TRUE(f1->pauth_key_b);
  // v1 has no rep size: x86-64 pltN entries are 16 bytes.
  EXPECT_EQ(f1->rep_size, 16);
  // Function 0's FREs: 2 x (1-byte start, info, one word) = 6 bytes.
  EXPECT_EQ(f1->fres_offset, f0->fres_offset + 6 + attr);

  absl::StatusOr<FdeRange> r = ReadFdeRange(b, *h, s.vaddr, 1);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->start, 0x1040u);
  EXPECT_EQ(r->end, 0x1080u);
}

INSTANTIATE_TEST_SUITE_P(
    Versions, FdeLayoutTest,
    ::testing::Values(
        Case{kVersion1, kFlagFdeSorted, false},
        Case{kVersion2, kFlagFdeSorted, false},
        Case{kVersion2, kFlagFdeSorted | kFlagFuncStartPcRel, false},
        Case{kVersion3, kFlagFdeSorted | kFlagFuncStartPcRel, false},
        Case{kVersion3, kFlagFdeSorted, false},
        Case{kVersion1, kFlagFdeSorted, true},
        Case{kVersion2, kFlagFdeSorted | kFlagFuncStartPcRel, true},
        Case{kVersion3, kFlagFdeSorted | kFlagFuncStartPcRel, true}),
    [](const ::testing::TestParamInfo<Case>& i) {
      return "v" + std::to_string(i.param.version) +
             (i.param.flags & kFlagFuncStartPcRel ? "_pcrel" : "") +
             (i.param.big_endian ? "_be" : "_le");
    });

TEST(FdeTest, V2StartIsSectionRelativeWithoutPcRel) {
  SectionSpec s = TwoFunctions(kVersion2);
  std::vector<uint8_t> b = BuildSframe(s);
  // Function 0 at 0x1000, section at 0x40000: -0x3f000 as a signed 32-bit.
  const int32_t raw =
      static_cast<int32_t>(b[28] | b[29] << 8 | b[30] << 16 | b[31] << 24);
  EXPECT_EQ(raw, 0x1000 - 0x40000);
  s.flags |= kFlagFuncStartPcRel;  // now relative to the field at offset 28
  b = BuildSframe(s);
  const int32_t pcrel =
      static_cast<int32_t>(b[28] | b[29] << 8 | b[30] << 16 | b[31] << 24);
  EXPECT_EQ(pcrel, 0x1000 - (0x40000 + 28));
}

TEST(FdeTest, V3SignalAndFlexBits) {
  SectionSpec s = TwoFunctions(kVersion3);
  s.fdes[0].signal_frame = true;
  s.fdes[0].fde_type = kFdeTypeFlex;
  std::vector<uint8_t> b = BuildSframe(s);
  absl::StatusOr<Header> h = ParseHeader(b);
  absl::StatusOr<Fde> f = ReadFde(b, *h, s.vaddr, 0);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_TRUE(f->signal_frame);
  EXPECT_EQ(f->fde_type, kFdeTypeFlex);
  // Before v3 the same bit is unused.
  s.version = kVersion2;
  b = BuildSframe(s);
  h = ParseHeader(b);
  f = ReadFde(b, *h, s.vaddr, 0);
  ASSERT_TRUE(f.ok());
  EXPECT_FALSE(f->signal_frame);
  EXPECT_EQ(f->fde_type, kFdeTypeDefault);
}

TEST(FdeTest, IndexOutOfRange) {
  SectionSpec s = TwoFunctions(kVersion2);
  std::vector<uint8_t> b = BuildSframe(s);
  absl::StatusOr<Header> h = ParseHeader(b);
  EXPECT_TRUE(absl::IsDataLoss(ReadFde(b, *h, s.vaddr, 2).status()));
  EXPECT_TRUE(
      absl::IsDataLoss(ReadFdeRange(b, *h, s.vaddr, 0xffffffff).status()));
}

TEST(FdeTest, UnknownFreTypeIsDataLoss) {
  SectionSpec s = TwoFunctions(kVersion2);
  s.fdes[0].fre_type = 3;
  std::vector<uint8_t> b = BuildSframe(s);
  absl::StatusOr<Header> h = ParseHeader(b);
  EXPECT_TRUE(absl::IsDataLoss(ReadFde(b, *h, s.vaddr, 0).status()));
}

TEST(FdeTest, PcMaskWithoutBlockSizeIsDataLoss) {
  SectionSpec s = TwoFunctions(kVersion2);
  s.fdes[1].rep_size = 0;
  std::vector<uint8_t> b = BuildSframe(s);
  absl::StatusOr<Header> h = ParseHeader(b);
  EXPECT_TRUE(absl::IsDataLoss(ReadFde(b, *h, s.vaddr, 1).status()));
}

TEST(FdeTest, UnknownV3FdeTypeIsUnimplemented) {
  SectionSpec s = TwoFunctions(kVersion3);
  s.fdes[0].fde_type = 7;
  std::vector<uint8_t> b = BuildSframe(s);
  absl::StatusOr<Header> h = ParseHeader(b);
  EXPECT_TRUE(absl::IsUnimplemented(ReadFde(b, *h, s.vaddr, 0).status()));
}

TEST(FdeTest, V3AttributesOutsideTheFreSubSectionAreDataLoss) {
  SectionSpec s = TwoFunctions(kVersion3);
  s.fdes[1].fre_off_override = 0x1000;
  std::vector<uint8_t> b = BuildSframe(s);
  absl::StatusOr<Header> h = ParseHeader(b);
  ASSERT_TRUE(h.ok());
  absl::StatusOr<Fde> f = ReadFde(b, *h, s.vaddr, 1);
  EXPECT_TRUE(absl::IsDataLoss(f.status())) << f.status();
  // The last 4 bytes of the sub-section cannot hold the 5-byte attributes.
  s.fdes[1].fre_off_override = h->fre_len - 4;
  b = BuildSframe(s);
  EXPECT_TRUE(absl::IsDataLoss(ReadFde(b, *h, s.vaddr, 1).status()));
}

TEST(FdeTest, StartThatWrapsIsDataLoss) {
  SectionSpec s = TwoFunctions(kVersion3);
  s.vaddr = 0xfffffffffffff000;
  s.fdes[0].func_start = 0xffffffffffffffe0;  // + size 0x30 wraps
  std::vector<uint8_t> b = BuildSframe(s);
  absl::StatusOr<Header> h = ParseHeader(b);
  EXPECT_TRUE(absl::IsDataLoss(ReadFdeRange(b, *h, s.vaddr, 0).status()));
}

TEST(FdeTest, NegativeOffsetsReachBelowTheSection) {
  SectionSpec s = TwoFunctions(kVersion3, /*big_endian=*/true);
  s.flags |= kFlagFuncStartPcRel;
  s.vaddr = 0x7fff00000000;
  std::vector<uint8_t> b = BuildSframe(s);
  absl::StatusOr<Header> h = ParseHeader(b);
  absl::StatusOr<FdeRange> r = ReadFdeRange(b, *h, s.vaddr, 0);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->start, 0x1000u);
}

}  // namespace
}  // namespace unwindd::unwinder::sframe
