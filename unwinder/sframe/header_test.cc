// SFrame §2.1-2.2 byte by byte: the magic in both byte orders, versions 1-3,
// the auxiliary header, and sub-sections that do not fit.
#include "unwinder/sframe/header.h"

#include "gtest/gtest.h"
#include "unwinder/sframe/testing/sframe_builder.h"

namespace unwindd::unwinder::sframe {
namespace {

using testing::BuildSframe;
using testing::FdeSpec;
using testing::SectionSpec;

SectionSpec OneFunction() {
  SectionSpec s;
  s.fdes.push_back(FdeSpec{.func_start = 0x1000,
                           .size = 0x10,
                           .fres = {{.start = 0, .words = {8}}}});
  return s;
}

TEST(HeaderTest, LittleEndianV2) {
  std::vector<uint8_t> b = BuildSframe(OneFunction());
  EXPECT_EQ(b[0], 0xe2);  // 0xdee2 stored little-endian
  EXPECT_EQ(b[1], 0xde);
  absl::StatusOr<Header> h = ParseHeader(b);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_FALSE(h->big_endian);
  EXPECT_EQ(h->version, kVersion2);
  EXPECT_TRUE(h->sorted());
  EXPECT_EQ(h->abi, kAbiAmd64LittleEndian);
  EXPECT_EQ(h->cfa_fixed_ra_offset, -8);
  EXPECT_EQ(h->num_fdes, 1u);
  EXPECT_EQ(h->num_fres, 1u);
  EXPECT_EQ(h->fre_len, 3u);  // ADDR1 start, info, one 1-byte word
  EXPECT_EQ(h->header_size, 28u);
  EXPECT_EQ(h->fde_size, 20u);
  EXPECT_EQ(h->fre_start, 28u + 20u);
}

TEST(HeaderTest, BigEndianFromTheMagic) {
  SectionSpec s = OneFunction();
  s.big_endian = true;
  s.abi = kAbiAArch64BigEndian;
  s.fixed_ra = 0;
  std::vector<uint8_t> b = BuildSframe(s);
  EXPECT_EQ(b[0], 0xde);
  absl::StatusOr<Header> h = ParseHeader(b);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_TRUE(h->big_endian);
  EXPECT_EQ(h->num_fdes, 1u);
  EXPECT_EQ(h->fre_len, 3u);
  EXPECT_EQ(h->abi, kAbiAArch64BigEndian);
}

TEST(HeaderTest, FdeSizePerVersion) {
  for (auto [version, size] :
       {std::pair{kVersion1, 17u}, {kVersion2, 20u}, {kVersion3, 16u}}) {
    SectionSpec s = OneFunction();
    s.version = version;
    absl::StatusOr<Header> h = ParseHeader(BuildSframe(s));
    ASSERT_TRUE(h.ok()) << h.status();
    EXPECT_EQ(h->fde_size, size) << "v" << int{version};
    EXPECT_EQ(h->fre_start, 28u + size);
  }
}

TEST(HeaderTest, AuxiliaryHeaderMovesTheSubSections) {
  SectionSpec s = OneFunction();
  s.auxhdr = {1, 2, 3, 4, 5};
  absl::StatusOr<Header> h = ParseHeader(BuildSframe(s));
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->auxhdr_len, 5);
  EXPECT_EQ(h->header_size, 33u);
  EXPECT_EQ(h->fde_start, 33u);
}

TEST(HeaderTest, FlagsPerVersion) {
  SectionSpec s = OneFunction();
  s.flags = kFlagFdeSorted | kFlagFramePointer | kFlagFuncStartPcRel;
  absl::StatusOr<Header> v2 = ParseHeader(BuildSframe(s));
  ASSERT_TRUE(v2.ok());
  EXPECT_TRUE(v2->frame_pointer());
  EXPECT_TRUE(v2->func_start_pcrel());
  s.version = kVersion3;  // v3 dropped SFRAME_F_FRAME_POINTER
  absl::StatusOr<Header> v3 = ParseHeader(BuildSframe(s));
  ASSERT_TRUE(v3.ok());
  EXPECT_FALSE(v3->frame_pointer());
  s.version = kVersion1;  // v1 had no PCREL flag
  absl::StatusOr<Header> v1 = ParseHeader(BuildSframe(s));
  ASSERT_TRUE(v1.ok());
  EXPECT_FALSE(v1->func_start_pcrel());
}

TEST(HeaderTest, BadMagicIsDataLoss) {
  std::vector<uint8_t> b = BuildSframe(OneFunction());
  b[0] = 0x12;
  absl::StatusOr<Header> h = ParseHeader(b);
  EXPECT_TRUE(absl::IsDataLoss(h.status())) << h.status();
  EXPECT_NE(h.status().message().find("magic"), std::string::npos);
}

TEST(HeaderTest, UnknownVersionIsUnimplemented) {
  std::vector<uint8_t> b = BuildSframe(OneFunction());
  b[2] = 4;
  EXPECT_TRUE(absl::IsUnimplemented(ParseHeader(b).status()));
  b[2] = 0;
  EXPECT_TRUE(absl::IsUnimplemented(ParseHeader(b).status()));
}

TEST(HeaderTest, TruncatedHeaderIsDataLoss) {
  std::vector<uint8_t> b = BuildSframe(OneFunction());
  for (size_t n : {0, 1, 4, 27}) {
    EXPECT_TRUE(absl::IsDataLoss(
        ParseHeader(absl::MakeConstSpan(b).subspan(0, n)).status()))
        << n;
  }
}

TEST(HeaderTest, FdeCountPastTheEndIsDataLoss) {
  SectionSpec s = OneFunction();
  s.num_fdes_override = 0x10000000;  // 5 GB of FDEs in a 51-byte section
  absl::StatusOr<Header> h = ParseHeader(BuildSframe(s));
  EXPECT_TRUE(absl::IsDataLoss(h.status())) << h.status();
  s.num_fdes_override = 0xffffffff;
  EXPECT_TRUE(absl::IsDataLoss(ParseHeader(BuildSframe(s)).status()));
}

TEST(HeaderTest, FdeCountIntoTheFreSubSectionIsDataLoss) {
  SectionSpec s = OneFunction();
  for (uint32_t i = 1; i < 10; ++i)
    s.fdes[0].fres.push_back({.start = i, .words = {8}});
  s.num_fdes_override = 2;  // fits in the bytes, but overlaps the FREs
  absl::StatusOr<Header> h = ParseHeader(BuildSframe(s));
  EXPECT_TRUE(absl::IsDataLoss(h.status())) << h.status();
  EXPECT_NE(h.status().message().find("overlaps"), std::string::npos);
}

TEST(HeaderTest, FreLengthPastTheEndIsDataLoss) {
  SectionSpec s = OneFunction();
  s.fre_len_override = 4;  // one byte more than there is
  EXPECT_TRUE(absl::IsDataLoss(ParseHeader(BuildSframe(s)).status()));
  s.fre_len_override = 0xffffffff;
  EXPECT_TRUE(absl::IsDataLoss(ParseHeader(BuildSframe(s)).status()));
}

TEST(HeaderTest, AuxiliaryHeaderPastTheEndIsDataLoss) {
  std::vector<uint8_t> b = BuildSframe(OneFunction());
  b[7] = 0xff;  // sfh_auxhdr_len
  EXPECT_TRUE(absl::IsDataLoss(ParseHeader(b).status()));
}

TEST(HeaderTest, ArchOfAbi) {
  EXPECT_EQ(*ArchOfAbi(kAbiAmd64LittleEndian), arch::Arch::kX86_64);
  EXPECT_EQ(*ArchOfAbi(kAbiAArch64LittleEndian), arch::Arch::kAArch64);
  EXPECT_EQ(*ArchOfAbi(kAbiAArch64BigEndian), arch::Arch::kAArch64);
  EXPECT_TRUE(absl::IsUnimplemented(ArchOfAbi(kAbiS390xBigEndian).status()));
  EXPECT_TRUE(absl::IsUnimplemented(ArchOfAbi(0).status()));
  EXPECT_TRUE(absl::IsUnimplemented(ArchOfAbi(99).status()));
}

}  // namespace
}  // namespace unwindd::unwinder::sframe
