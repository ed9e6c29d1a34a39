// FDE and FRE lookup over whole sections: binary search when the FDEs are
// sorted, the built index when they are not, PCINC and PCMASK FREs, and
// malformed sections giving errors rather than wrong rows or crashes.
#include "unwinder/sframe/section.h"

#include "gtest/gtest.h"
#include "unwinder/sframe/testing/sframe_builder.h"

namespace unwindd::unwinder::sframe {
namespace {

using testing::BuildSframe;
using testing::FdeSpec;
using testing::FreSpec;
using testing::SectionSpec;

// `n` functions of 0x40 bytes from 0x1000, each with FREs at +0 (sp+8),
// +1 (sp+16) and +0x30 (sp+8).
SectionSpec Functions(int n, uint8_t version = kVersion2) {
  SectionSpec s;
  s.version = version;
  s.flags = kFlagFdeSorted | (version >= kVersion2 ? kFlagFuncStartPcRel : 0);
  for (int i = 0; i < n; ++i) {
    s.fdes.push_back(FdeSpec{.func_start = 0x1000 + 0x40 * uint64_t(i),
                             .size = 0x40,
                             .fres = {{.start = 0, .words = {8}},
                                      {.start = 1, .words = {16}},
                                      {.start = 0x30, .words = {8}}}});
  }
  return s;
}

std::unique_ptr<SframeSection> Parse(const std::vector<uint8_t>& b,
                                     const SectionSpec& s) {
  absl::StatusOr<std::unique_ptr<SframeSection>> p =
      SframeSection::Parse(b, s.vaddr);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *std::move(p) : nullptr;
}

class LookupTest : public ::testing::TestWithParam<uint8_t> {};

TEST_P(LookupTest, BinarySearchFindsEveryFunction) {
  SectionSpec s = Functions(101, GetParam());
  std::vector<uint8_t> b = BuildSframe(s);
  std::unique_ptr<SframeSection> sec = Parse(b, s);
  ASSERT_NE(sec, nullptr);
  for (int i = 0; i < 101; ++i) {
    const uint64_t f = 0x1000 + 0x40 * uint64_t(i);
    absl::StatusOr<FreMatch> m = sec->FindFre(f + 0x10);
    ASSERT_TRUE(m.ok()) << i << ": " << m.status();
    EXPECT_EQ(m->fde.index, static_cast<uint32_t>(i));
    EXPECT_EQ(m->fre.Signed(0), 16);
    EXPECT_EQ(m->pc_lo, f + 1);
    EXPECT_EQ(m->pc_hi, f + 0x30);
    absl::StatusOr<FreMatch> first = sec->FindFre(f);
    ASSERT_TRUE(first.ok());
    EXPECT_EQ(first->pc_lo, f);
    EXPECT_EQ(first->pc_hi, f + 1);
    absl::StatusOr<FreMatch> last = sec->FindFre(f + 0x3f);
    ASSERT_TRUE(last.ok());
    EXPECT_EQ(last->pc_lo, f + 0x30);
    EXPECT_EQ(last->pc_hi, f + 0x40);
  }
  EXPECT_TRUE(absl::IsNotFound(sec->FindFre(0xfff).status()));
  EXPECT_TRUE(absl::IsNotFound(sec->FindFre(0x1000 + 0x40 * 101).status()));
  EXPECT_TRUE(absl::IsNotFound(sec->FindFre(0).status()));
  EXPECT_TRUE(absl::IsNotFound(sec->FindFre(~uint64_t{0}).status()));
}

INSTANTIATE_TEST_SUITE_P(Versions, LookupTest,
                         ::testing::Values(kVersion1, kVersion2, kVersion3),
                         [](const auto& i) {
                           return "v" + std::to_string(i.param);
                         });

TEST(SectionTest, GapsBetweenFunctionsAreNotFound) {
  SectionSpec s = Functions(3);
  s.fdes[1].func_start = 0x2000;
  s.fdes[2].func_start = 0x3000;
  std::vector<uint8_t> b = BuildSframe(s);
  std::unique_ptr<SframeSection> sec = Parse(b, s);
  EXPECT_TRUE(absl::IsNotFound(sec->FindFre(0x1040).status()));
  EXPECT_TRUE(absl::IsNotFound(sec->FindFre(0x1fff).status()));
  EXPECT_TRUE(sec->FindFre(0x2000).ok());
}

TEST(SectionTest, UnsortedWithoutTheFlagUsesABuiltIndex) {
  SectionSpec s = Functions(50);
  std::reverse(s.fdes.begin(), s.fdes.end());
  s.flags = kFlagFuncStartPcRel;  // honest: not sorted
  std::vector<uint8_t> b = BuildSframe(s);
  std::unique_ptr<SframeSection> sec = Parse(b, s);
  ASSERT_NE(sec, nullptr);
  for (int i = 0; i < 50; ++i) {
    absl::StatusOr<Fde> f = sec->FindFde(0x1000 + 0x40 * uint64_t(i) + 5);
    ASSERT_TRUE(f.ok()) << i;
    EXPECT_EQ(f->index, static_cast<uint32_t>(49 - i));
  }
  EXPECT_TRUE(absl::IsNotFound(sec->FindFde(0x1000 + 0x40 * 50).status()));
}

TEST(SectionTest, UnsortedWithTheFlagIsDataLoss) {
  SectionSpec s = Functions(5);
  std::swap(s.fdes[1], s.fdes[3]);
  std::vector<uint8_t> b = BuildSframe(s);
  absl::StatusOr<std::unique_ptr<SframeSection>> p =
      SframeSection::Parse(b, s.vaddr);
  EXPECT_TRUE(absl::IsDataLoss(p.status())) << p.status();
  EXPECT_NE(p.status().message().find("SFRAME_F_FDE_SORTED"),
            std::string::npos);
}

TEST(SectionTest, PcMaskRepeatsTheFresEveryBlock) {
  // A .plt of 4 16-byte entries: CFA sp+8 until the push at +6, then sp+16
  // from +11 (SFrame §2.3.1 PCMASK: pc % rep_size selects the FRE).
  for (uint8_t version : {kVersion2, kVersion3}) {
    SectionSpec s;
    s.version = version;
    s.fdes.push_back(FdeSpec{
        .func_start = 0x1030,
        .size = 64,
        .pc_type = kPcTypeMask,
        .rep_size = 16,
        .fres = {{.start = 0, .words = {8}}, {.start = 11, .words = {16}}}});
    std::vector<uint8_t> b = BuildSframe(s);
    std::unique_ptr<SframeSection> sec = Parse(b, s);
    for (uint64_t entry = 0; entry < 4; ++entry) {
      const uint64_t base = 0x1030 + 16 * entry;
      for (uint64_t off = 0; off < 16; ++off) {
        absl::StatusOr<FreMatch> m = sec->FindFre(base + off);
        ASSERT_TRUE(m.ok()) << m.status();
        EXPECT_EQ(m->fre.Signed(0), off < 11 ? 8 : 16) << base + off;
        EXPECT_EQ(m->pc_lo, base + (off < 11 ? 0 : 11));
        EXPECT_EQ(m->pc_hi, base + (off < 11 ? 11 : 16));
      }
    }
  }
}

TEST(SectionTest, V1PcMaskUsesSixteenByteBlocks) {
  SectionSpec s;
  s.version = kVersion1;
  s.fdes.push_back(FdeSpec{
      .func_start = 0x1030,
      .size = 48,
      .pc_type = kPcTypeMask,
      .fres = {{.start = 0, .words = {8}}, {.start = 11, .words = {16}}}});
  std::vector<uint8_t> b = BuildSframe(s);
  std::unique_ptr<SframeSection> sec = Parse(b, s);
  EXPECT_EQ(sec->FindFre(0x1030 + 32 + 12)->fre.Signed(0), 16);
  EXPECT_EQ(sec->FindFre(0x1030 + 32 + 10)->fre.Signed(0), 8);
}

TEST(SectionTest, FirstFreAfterTheStartLeavesAHole) {
  SectionSpec s = Functions(1);
  s.fdes[0].fres = {{.start = 4, .words = {8}}};
  std::vector<uint8_t> b = BuildSframe(s);
  std::unique_ptr<SframeSection> sec = Parse(b, s);
  EXPECT_TRUE(absl::IsNotFound(sec->FindFre(0x1003).status()));
  EXPECT_TRUE(sec->FindFre(0x1004).ok());
}

TEST(SectionTest, FunctionWithoutFresIsNotFound) {
  SectionSpec s = Functions(1);
  s.fdes[0].fres.clear();
  std::vector<uint8_t> b = BuildSframe(s);
  std::unique_ptr<SframeSection> sec = Parse(b, s);
  EXPECT_TRUE(absl::IsNotFound(sec->FindFre(0x1000).status()));
}

TEST(SectionTest, FreCountPastTheEndIsDataLoss) {
  for (uint8_t version : {kVersion1, kVersion2, kVersion3}) {
    SectionSpec s = Functions(2, version);
    s.fdes[1].num_fres_override = version == kVersion3 ? 0xffff : 0xffffffff;
    std::vector<uint8_t> b = BuildSframe(s);
    std::unique_ptr<SframeSection> sec = Parse(b, s);
    ASSERT_NE(sec, nullptr);
    absl::StatusOr<FreMatch> m = sec->FindFre(0x1040 + 0x3f);  // scans them all
    EXPECT_TRUE(absl::IsDataLoss(m.status())) << int{version} << m.status();
    absl::StatusOr<Fde> f = sec->GetFde(1);
    ASSERT_TRUE(f.ok());
    EXPECT_TRUE(absl::IsDataLoss(sec->GetFres(*f).status()));
  }
}

TEST(SectionTest, FreOffsetOutsideTheSectionIsDataLoss) {
  for (uint8_t version : {kVersion1, kVersion2, kVersion3}) {
    for (uint32_t bad : {0x100u, 0x7fffffffu, 0xffffffffu}) {
      SectionSpec s = Functions(2, version);
      s.fdes[0].fre_off_override = bad;
      std::vector<uint8_t> b = BuildSframe(s);
      std::unique_ptr<SframeSection> sec = Parse(b, s);
      ASSERT_NE(sec, nullptr);
      absl::StatusOr<Row> r = sec->FindRow(0x1010);
      EXPECT_TRUE(absl::IsDataLoss(r.status())) << int{version} << r.status();
      EXPECT_TRUE(sec->FindRow(0x1050).ok());  // the other function is fine
    }
  }
}

TEST(SectionTest, UnsupportedAbiIsUnimplemented) {
  SectionSpec s = Functions(1);
  s.abi = kAbiS390xBigEndian;
  s.big_endian = true;
  std::vector<uint8_t> b = BuildSframe(s);
  EXPECT_TRUE(absl::IsUnimplemented(SframeSection::Parse(b, s.vaddr).status()));
}

TEST(SectionTest, EveryTruncationIsAnErrorNotACrash) {
  for (uint8_t version : {kVersion1, kVersion2, kVersion3}) {
    SectionSpec s = Functions(3, version);
    std::vector<uint8_t> b = BuildSframe(s);
    for (size_t n = 0; n < b.size(); ++n) {
      std::vector<uint8_t> cut(b.begin(), b.begin() + n);
      absl::StatusOr<std::unique_ptr<SframeSection>> p =
          SframeSection::Parse(cut, s.vaddr);
      if (!p.ok()) {
        EXPECT_TRUE(absl::IsDataLoss(p.status())) << n << p.status();
        continue;
      }
      for (uint64_t pc = 0x1000; pc < 0x10c0; pc += 7) (void)(*p)->FindRow(pc);
    }
  }
}

TEST(SectionTest, EveryByteFlipIsAnErrorNotACrash) {
  SectionSpec s = Functions(3, kVersion3);
  const std::vector<uint8_t> b = BuildSframe(s);
  for (size_t i = 0; i < b.size(); ++i) {
    for (uint8_t x : {0x01, 0x80, 0xff}) {
      std::vector<uint8_t> bad = b;
      bad[i] ^= x;
      absl::StatusOr<std::unique_ptr<SframeSection>> p =
          SframeSection::Parse(bad, s.vaddr);
      if (!p.ok()) continue;
      for (uint64_t pc = 0x1000; pc < 0x10c0; pc += 5) (void)(*p)->FindRow(pc);
    }
  }
}

}  // namespace
}  // namespace unwindd::unwinder::sframe
