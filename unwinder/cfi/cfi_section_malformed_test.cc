// Malformed CIEs and FDEs: every one is an error with a code, never a crash,
// a read into the next entry, or a huge allocation.
#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "arch/arch.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "unwinder/cfi/cfi_section.h"
#include "unwinder/cfi/encoding.h"
#include "unwinder/cfi/test_bytes.h"

namespace unwindd::unwinder {
namespace {

using arch::Arch;
using ::testing::HasSubstr;

constexpr absl::StatusCode kDataLoss = absl::StatusCode::kDataLoss;

TestBytes CieBody(uint8_t fde_encoding = kPeUdata8) {
  return TestBytes().U8(1).Str("zR").Uleb(1).Sleb(-8).U8(16).Uleb(1).U8(
      fde_encoding);
}

TestBytes FdeBody() { return TestBytes().U64(0x1000).U64(0x10).Uleb(0); }

CfiSection Eh(const TestBytes& s) {
  return CfiSection(CfiKind::kEhFrame, s.span(), 0x1000, Arch::kX86_64, {});
}

CfiSection Debug(const TestBytes& s) {
  return CfiSection(CfiKind::kDebugFrame, s.span(), 0, Arch::kX86_64, {});
}

TEST(CfiSectionMalformedTest, TruncatedCie) {
  // The augmentation string's NUL lies beyond the entry's length.
  TestBytes s;
  s.U32(7).U32(0).U8(1).Raw({'z', 'R'});
  s.Raw({0, 1, 2, 3});  // bytes after the entry that must not be read
  absl::StatusOr<Cie> cie = Eh(s).ParseCieAt(0);
  EXPECT_EQ(cie.status().code(), kDataLoss);
  EXPECT_THAT(cie.status().message(), HasSubstr("offset 0x0"));

  // The entry ends before the return address register.
  TestBytes s2;
  s2.U32(4 + 1 + 1 + 1 + 1).U32(0).U8(1).Str("").Uleb(1).Sleb(-8);
  EXPECT_EQ(Eh(s2).ParseCieAt(0).status().code(), kDataLoss);
}

TEST(CfiSectionMalformedTest, LengthPastSectionEnd) {
  TestBytes s;
  s.U32(0x100).U32(0).U8(1).Str("");
  absl::StatusOr<Cie> cie = Eh(s).ParseCieAt(0);
  EXPECT_EQ(cie.status().code(), kDataLoss);
  EXPECT_THAT(cie.status().message(), HasSubstr("0x100"));

  // A 64-bit length near 2^64 must not wrap around.
  TestBytes s64;
  s64.U32(0xffffffffu).U64(0xfffffffffffffff8).U64(0).U8(1);
  EXPECT_EQ(Eh(s64).ParseCieAt(0).status().code(), kDataLoss);

  // The 64-bit length itself is truncated.
  TestBytes s64t;
  s64t.U32(0xffffffffu).U32(8);
  EXPECT_EQ(Eh(s64t).ParseCieAt(0).status().code(), kDataLoss);
}

TEST(CfiSectionMalformedTest, ReservedLengthsAndShortIds) {
  TestBytes s;
  s.U32(0xfffffff0u).U32(0).U32(0);
  EXPECT_EQ(Eh(s).ParseCieAt(0).status().code(), kDataLoss);
  // Length 2 cannot even hold the CIE id.
  TestBytes s2;
  s2.U32(2).U16(0).U32(0);
  EXPECT_EQ(Eh(s2).ParseCieAt(0).status().code(), kDataLoss);
}

TEST(CfiSectionMalformedTest, OffsetsOutsideTheSection) {
  TestBytes s;
  AppendEhCie(s, CieBody());
  EXPECT_EQ(Eh(s).ParseCieAt(s.size()).status().code(), kDataLoss);
  EXPECT_EQ(Eh(s).ParseFdeAt(~uint64_t{0}).status().code(), kDataLoss);
  EXPECT_EQ(Eh(s).ParseCieAt(s.size() - 2).status().code(), kDataLoss);
}

TEST(CfiSectionMalformedTest, WrongKindOfEntry) {
  TestBytes s;
  const size_t cie = AppendEhCie(s, CieBody());
  const size_t fde = AppendEhFde(s, cie, FdeBody());
  EXPECT_EQ(Eh(s).ParseCieAt(fde).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Eh(s).ParseFdeAt(cie).status().code(),
            absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(Eh(s).ParseFdeAt(fde).ok());
}

TEST(CfiSectionMalformedTest, TerminatorIsNeitherCieNorFde) {
  TestBytes s;
  s.U32(0);
  EXPECT_EQ(Eh(s).ParseCieAt(0).status().code(), kDataLoss);
  EXPECT_EQ(Eh(s).ParseFdeAt(0).status().code(), kDataLoss);
}

TEST(CfiSectionMalformedTest, UnsupportedVersionsAndSizes) {
  for (uint8_t version : {0, 2, 5, 255}) {
    TestBytes s;
    AppendEhCie(s, TestBytes().U8(version).Str("").Uleb(1).Sleb(-8).U8(16));
    EXPECT_EQ(Eh(s).ParseCieAt(0).status().code(), kDataLoss)
        << "version " << int{version};
  }
  TestBytes bad_size;
  AppendEntry(bad_size, 0xffffffffu,
              TestBytes().U8(4).Str("").U8(3).U8(0).Uleb(1).Sleb(-8).Uleb(16));
  EXPECT_EQ(Debug(bad_size).ParseCieAt(0).status().code(), kDataLoss);

  TestBytes eh_segment;
  AppendEhCie(eh_segment,
              TestBytes().U8(4).Str("").U8(8).U8(4).Uleb(1).Sleb(-8).Uleb(16));
  EXPECT_EQ(Eh(eh_segment).ParseCieAt(0).status().code(), kDataLoss);

  TestBytes big_ra;
  AppendEhCie(big_ra, TestBytes().U8(3).Str("").Uleb(1).Sleb(-8).Uleb(70000));
  EXPECT_EQ(Eh(big_ra).ParseCieAt(0).status().code(), kDataLoss);
}

TEST(CfiSectionMalformedTest, UnknownAugmentationWithoutZ) {
  TestBytes s;
  AppendEhCie(s, TestBytes().U8(1).Str("X").Uleb(1).Sleb(-8).U8(16));
  absl::StatusOr<Cie> cie = Eh(s).ParseCieAt(0);
  EXPECT_EQ(cie.status().code(), kDataLoss);
  EXPECT_THAT(cie.status().message(), HasSubstr("'X'"));
}

TEST(CfiSectionMalformedTest, AugmentationDataOverruns) {
  // 'z' says 1 byte, but R and P together need more.
  TestBytes s;
  AppendEhCie(s, TestBytes()
                     .U8(1)
                     .Str("zRP")
                     .Uleb(1)
                     .Sleb(-8)
                     .U8(16)
                     .Uleb(1)
                     .U8(kPeUdata4)
                     .U8(kPeUdata4)
                     .U32(0));
  EXPECT_EQ(Eh(s).ParseCieAt(0).status().code(), kDataLoss);

  // 'z' length past the end of the entry.
  TestBytes s2;
  AppendEhCie(s2, TestBytes().U8(1).Str("z").Uleb(1).Sleb(-8).U8(16).Uleb(50));
  s2.Zeros(64);  // inside the section, outside the entry
  EXPECT_EQ(Eh(s2).ParseCieAt(0).status().code(), kDataLoss);

  // An FDE's augmentation length past its end.
  TestBytes s3;
  const size_t cie = AppendEhCie(s3, CieBody());
  const size_t fde =
      AppendEhFde(s3, cie, TestBytes().U64(0x1000).U64(0x10).Uleb(9));
  s3.Zeros(16);
  EXPECT_EQ(Eh(s3).ParseFdeAt(fde).status().code(), kDataLoss);

  // A personality with an omitted encoding has nothing to read.
  TestBytes s4;
  AppendEhCie(
      s4,
      TestBytes().U8(1).Str("zP").Uleb(1).Sleb(-8).U8(16).Uleb(1).U8(kPeOmit));
  EXPECT_EQ(Eh(s4).ParseCieAt(0).status().code(), kDataLoss);
}

TEST(CfiSectionMalformedTest, FdeFieldsStayInsideTheirEntry) {
  TestBytes s;
  const size_t cie = AppendEhCie(s, CieBody());
  // pc_begin needs 8 bytes; the entry has 4 more, the next entry has plenty.
  const size_t fde = AppendEhFde(s, cie, TestBytes().U32(0x1000));
  AppendEhFde(s, cie, FdeBody());
  EXPECT_EQ(Eh(s).ParseFdeAt(fde).status().code(), kDataLoss);
}

TEST(CfiSectionMalformedTest, BadFdeEncodings) {
  for (uint8_t enc : {kPeOmit, uint8_t{0x07}, uint8_t{0x60},
                      uint8_t{kPeIndirect | kPePcrel | kPeSdata4}}) {
    TestBytes s;
    const size_t cie = AppendEhCie(s, CieBody(enc));
    const size_t fde = AppendEhFde(s, cie, FdeBody());
    EXPECT_EQ(Eh(s).ParseFdeAt(fde).status().code(), kDataLoss)
        << "encoding 0x" << std::hex << int{enc};
  }
}

TEST(CfiSectionMalformedTest, PcRangeOverflow) {
  TestBytes s;
  const size_t cie = AppendEhCie(s, CieBody());
  const size_t fde = AppendEhFde(
      s, cie, TestBytes().U64(0xfffffffffffffff0).U64(0x20).Uleb(0));
  EXPECT_EQ(Eh(s).ParseFdeAt(fde).status().code(), kDataLoss);

  // With 4-byte addresses the space ends at 2^32.
  TestBytes s4;
  const size_t cie4 = AppendEntry(
      s4, 0xffffffffu,
      TestBytes().U8(4).Str("").U8(4).U8(0).Uleb(1).Sleb(-4).Uleb(8));
  const size_t fde4 =
      AppendEntry(s4, cie4, TestBytes().U32(0xfffffff0).U32(0x20));
  EXPECT_EQ(Debug(s4).ParseFdeAt(fde4).status().code(), kDataLoss);
}

TEST(CfiSectionMalformedTest, CiePointerBeforeSectionStart) {
  TestBytes s;
  AppendEntry(s, 0x1000, FdeBody());  // points 0x1000 bytes back from 4
  absl::StatusOr<Fde> fde = Eh(s).ParseFdeAt(0);
  EXPECT_EQ(fde.status().code(), kDataLoss);
  EXPECT_THAT(fde.status().message(), HasSubstr("0x1000"));
}

TEST(CfiSectionMalformedTest, DebugFrameCiePointerOutOfRange) {
  TestBytes s;
  AppendEntry(s, 0xffffffffu,
              TestBytes().U8(1).Str("").Uleb(1).Sleb(-8).U8(16));
  const size_t fde = AppendEntry(s, 0x5000, FdeBody());
  EXPECT_EQ(Debug(s).ParseFdeAt(fde).status().code(), kDataLoss);
}

TEST(CfiSectionMalformedTest, CiePointerToItself) {
  TestBytes eh;
  AppendEhCie(eh, CieBody());
  const size_t fde = eh.size();
  AppendEntry(eh, 4, FdeBody());  // 4 back from the pointer: its own length
  EXPECT_EQ(Eh(eh).ParseFdeAt(fde).status().code(), kDataLoss);

  TestBytes df;
  AppendEntry(df, 0xffffffffu,
              TestBytes().U8(1).Str("").Uleb(1).Sleb(-8).U8(16));
  const size_t dfde = df.size();
  AppendEntry(df, dfde, FdeBody());
  EXPECT_EQ(Debug(df).ParseFdeAt(dfde).status().code(), kDataLoss);
}

TEST(CfiSectionMalformedTest, CiePointerToAnFdeOrIntoAnEntry) {
  TestBytes s;
  const size_t cie = AppendEhCie(s, CieBody());
  const size_t fde1 = AppendEhFde(s, cie, FdeBody());
  const size_t fde2 = AppendEhFde(s, fde1, FdeBody());
  absl::StatusOr<Fde> fde = Eh(s).ParseFdeAt(fde2);
  EXPECT_EQ(fde.status().code(), kDataLoss);
  EXPECT_THAT(fde.status().message(), HasSubstr("not a CIE"));

  // Into the middle of the CIE: whatever is there is not a valid CIE.
  const size_t fde3 = AppendEhFde(s, cie + 5, FdeBody());
  EXPECT_EQ(Eh(s).ParseFdeAt(fde3).status().code(), kDataLoss);
}

}  // namespace
}  // namespace unwindd::unwinder
