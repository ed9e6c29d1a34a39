#include "unwinder/cfi/eh_frame_hdr.h"

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "unwinder/cfi/encoding.h"
#include "unwinder/cfi/test_bytes.h"

namespace unwindd::unwinder {
namespace {

using ::testing::HasSubstr;

constexpr absl::StatusCode kDataLoss = absl::StatusCode::kDataLoss;
constexpr absl::StatusCode kNotFound = absl::StatusCode::kNotFound;
constexpr uint64_t kHdr = 0x2000;  // .eh_frame_hdr sh_addr in the tests

// What ld writes: pcrel|sdata4 eh_frame_ptr, udata4 count,
// datarel|sdata4 table (LSB §10.6.2).
constexpr uint8_t kPtrEnc = kPePcrel | kPeSdata4;      // 0x1b
constexpr uint8_t kCountEnc = kPeUdata4;               // 0x03
constexpr uint8_t kTableEnc = kPeDatarel | kPeSdata4;  // 0x3b

// Header bytes up to the table: eh_frame_ptr points at 0x3000.
TestBytes Header(uint8_t ptr_enc, uint8_t count_enc, uint8_t table_enc,
                 uint32_t count) {
  TestBytes b;
  b.U8(1).U8(ptr_enc).U8(count_enc).U8(table_enc);
  b.S32(static_cast<int32_t>(0x3000 - (kHdr + 4)));
  if (count_enc != kPeOmit) b.U32(count);
  return b;
}

uint64_t LookupOrZero(const EhFrameHdr& hdr, uint64_t pc) {
  absl::StatusOr<uint64_t> fde = hdr.Lookup(pc);
  if (!fde.ok()) {
    EXPECT_EQ(fde.status().code(), kNotFound) << fde.status();
    return 0;
  }
  return *fde;
}

// Three FDEs at 0x3010, 0x3040, 0x3070 covering code from 0x1000, 0x1100,
// 0x1200; checks every kind of lookup.
void ExpectStandardLookups(const EhFrameHdr& hdr) {
  EXPECT_TRUE(hdr.HasTable());
  EXPECT_EQ(hdr.fde_count(), 3u);
  EXPECT_EQ(hdr.eh_frame_vaddr(), 0x3000u);
  EXPECT_EQ(LookupOrZero(hdr, 0xfff), 0u);
  EXPECT_EQ(LookupOrZero(hdr, 0x1000), 0x3010u);
  EXPECT_EQ(LookupOrZero(hdr, 0x10ff), 0x3010u);
  EXPECT_EQ(LookupOrZero(hdr, 0x1100), 0x3040u);
  EXPECT_EQ(LookupOrZero(hdr, 0x1200), 0x3070u);
  EXPECT_EQ(LookupOrZero(hdr, 0xffffffff), 0x3070u);
}

constexpr uint64_t kLocs[3] = {0x1000, 0x1100, 0x1200};
constexpr uint64_t kFdes[3] = {0x3010, 0x3040, 0x3070};

TEST(EhFrameHdrTest, StandardDatarelSdata4Table) {
  TestBytes b = Header(kPtrEnc, kCountEnc, kTableEnc, 3);
  for (int i = 0; i < 3; ++i) {
    b.S32(static_cast<int32_t>(kLocs[i] - kHdr));  // negative: code below
    b.S32(static_cast<int32_t>(kFdes[i] - kHdr));
  }
  absl::StatusOr<EhFrameHdr> hdr = EhFrameHdr::Parse(b.span(), kHdr, 8);
  ASSERT_TRUE(hdr.ok()) << hdr.status();
  ExpectStandardLookups(*hdr);
}

TEST(EhFrameHdrTest, AbsoluteUdata4Table) {
  TestBytes b = Header(kPtrEnc, kCountEnc, kPeUdata4, 3);
  for (int i = 0; i < 3; ++i) b.U32(kLocs[i]).U32(kFdes[i]);
  absl::StatusOr<EhFrameHdr> hdr = EhFrameHdr::Parse(b.span(), kHdr, 8);
  ASSERT_TRUE(hdr.ok()) << hdr.status();
  ExpectStandardLookups(*hdr);
}

TEST(EhFrameHdrTest, PcrelSdata8TableIsRelativeToEachField) {
  TestBytes b = Header(kPtrEnc, kCountEnc, kPePcrel | kPeSdata8, 3);
  for (int i = 0; i < 3; ++i) {
    b.S64(static_cast<int64_t>(kLocs[i] - (kHdr + b.size())));
    b.S64(static_cast<int64_t>(kFdes[i] - (kHdr + b.size())));
  }
  absl::StatusOr<EhFrameHdr> hdr = EhFrameHdr::Parse(b.span(), kHdr, 8);
  ASSERT_TRUE(hdr.ok()) << hdr.status();
  ExpectStandardLookups(*hdr);
}

TEST(EhFrameHdrTest, DatarelUdata2Table) {
  TestBytes b = Header(kPtrEnc, kCountEnc, kPeDatarel | kPeUdata2, 2);
  b.U16(0x100).U16(0x1010).U16(0x200).U16(0x1040);
  absl::StatusOr<EhFrameHdr> hdr = EhFrameHdr::Parse(b.span(), kHdr, 8);
  ASSERT_TRUE(hdr.ok()) << hdr.status();
  EXPECT_EQ(LookupOrZero(*hdr, kHdr + 0xff), 0u);
  EXPECT_EQ(LookupOrZero(*hdr, kHdr + 0x180), kHdr + 0x1010);
  EXPECT_EQ(LookupOrZero(*hdr, kHdr + 0x200), kHdr + 0x1040);
}

TEST(EhFrameHdrTest, AbsptrTableFollowsTheAddressSize) {
  TestBytes b8 = Header(kPtrEnc, kCountEnc, kPeAbsptr, 3);
  for (int i = 0; i < 3; ++i) b8.U64(kLocs[i]).U64(kFdes[i]);
  absl::StatusOr<EhFrameHdr> hdr8 = EhFrameHdr::Parse(b8.span(), kHdr, 8);
  ASSERT_TRUE(hdr8.ok()) << hdr8.status();
  ExpectStandardLookups(*hdr8);

  TestBytes b4 = Header(kPtrEnc, kCountEnc, kPeAbsptr, 3);
  for (int i = 0; i < 3; ++i) b4.U32(kLocs[i]).U32(kFdes[i]);
  absl::StatusOr<EhFrameHdr> hdr4 = EhFrameHdr::Parse(b4.span(), kHdr, 4);
  ASSERT_TRUE(hdr4.ok()) << hdr4.status();
  ExpectStandardLookups(*hdr4);
}

TEST(EhFrameHdrTest, FourByteDatarelWraps) {
  // hdr near the top of a 32-bit space, code at the bottom.
  constexpr uint64_t kHighHdr = 0xfffff000;
  TestBytes b;
  b.U8(1).U8(kPeDatarel | kPeSdata4).U8(kCountEnc).U8(kTableEnc);
  b.S32(0x100).U32(1).S32(0x2000).S32(-0x10);
  absl::StatusOr<EhFrameHdr> hdr = EhFrameHdr::Parse(b.span(), kHighHdr, 4);
  ASSERT_TRUE(hdr.ok()) << hdr.status();
  EXPECT_EQ(hdr->eh_frame_vaddr(), 0xfffff100u);
  EXPECT_EQ(LookupOrZero(*hdr, 0x1500), 0xffffeff0u);  // 0x1000 after wrap
  EXPECT_EQ(LookupOrZero(*hdr, 0xfff), 0u);
}

TEST(EhFrameHdrTest, ManyEntriesBinarySearch) {
  constexpr int kCount = 1000;
  TestBytes b = Header(kPtrEnc, kCountEnc, kTableEnc, kCount);
  for (int i = 0; i < kCount; ++i) b.S32(0x10000 + 0x40 * i).S32(0x100 + i);
  absl::StatusOr<EhFrameHdr> hdr = EhFrameHdr::Parse(b.span(), kHdr, 8);
  ASSERT_TRUE(hdr.ok()) << hdr.status();
  for (int i = 0; i < kCount; ++i) {
    const uint64_t loc = kHdr + 0x10000 + 0x40 * i;
    ASSERT_EQ(LookupOrZero(*hdr, loc), kHdr + 0x100 + i) << i;
    ASSERT_EQ(LookupOrZero(*hdr, loc + 0x3f), kHdr + 0x100 + i) << i;
  }
  EXPECT_EQ(LookupOrZero(*hdr, kHdr + 0xffff), 0u);
}

// The datarel|sdata4 table is read by its own loop; the same entries
// written pc-relative go through the general decoder. Both must answer
// alike everywhere, code below the header (negative offsets) included.
TEST(EhFrameHdrTest, DatarelSdata4AnswersAsTheGeneralDecoder) {
  constexpr int kCount = 300;
  for (int address_size : {4, 8}) {
    TestBytes datarel = Header(kPtrEnc, kCountEnc, kTableEnc, kCount);
    TestBytes pcrel = Header(kPtrEnc, kCountEnc, kPePcrel | kPeSdata4, kCount);
    for (int i = 0; i < kCount; ++i) {
      const int64_t loc = -0x1000 + 0x30 * i - (i % 7);
      const int64_t fde = 0x800 + 8 * i;
      datarel.S32(static_cast<int32_t>(loc)).S32(static_cast<int32_t>(fde));
      pcrel.S32(static_cast<int32_t>(loc - static_cast<int64_t>(pcrel.size())));
      pcrel.S32(static_cast<int32_t>(fde - static_cast<int64_t>(pcrel.size())));
    }
    absl::StatusOr<EhFrameHdr> a = EhFrameHdr::Parse(datarel.span(), kHdr, address_size);
    absl::StatusOr<EhFrameHdr> b = EhFrameHdr::Parse(pcrel.span(), kHdr, address_size);
    ASSERT_TRUE(a.ok()) << a.status();
    ASSERT_TRUE(b.ok()) << b.status();
    for (uint64_t pc = kHdr - 0x1010; pc < kHdr - 0x1000 + 0x30 * kCount + 0x40; ++pc) {
      absl::StatusOr<uint64_t> x = a->Lookup(pc);
      absl::StatusOr<uint64_t> y = b->Lookup(pc);
      ASSERT_EQ(x.status(), y.status()) << std::hex << pc;
      if (x.ok()) ASSERT_EQ(*x, *y) << std::hex << pc;
    }
  }
}

TEST(EhFrameHdrTest, UnsearchableTablesHaveNoTable) {
  for (uint8_t enc :
       {uint8_t{kPeDatarel | kPeUleb128}, uint8_t{kPeDatarel | kPeSleb128},
        kPeOmit, uint8_t{kPeTextrel | kPeSdata4},
        uint8_t{kPeFuncrel | kPeSdata4}, kPeAligned,
        uint8_t{kPeIndirect | kPeDatarel | kPeSdata4}, uint8_t{0x07}}) {
    TestBytes b = Header(kPtrEnc, kCountEnc, enc, 2);
    b.Zeros(16);
    absl::StatusOr<EhFrameHdr> hdr = EhFrameHdr::Parse(b.span(), kHdr, 8);
    ASSERT_TRUE(hdr.ok()) << hdr.status();
    EXPECT_FALSE(hdr->HasTable()) << "encoding 0x" << std::hex << int{enc};
    EXPECT_EQ(hdr->eh_frame_vaddr(), 0x3000u);
    EXPECT_EQ(hdr->Lookup(0x1000).status().code(), kNotFound);
  }
}

TEST(EhFrameHdrTest, OmittedOrZeroCountHasNoTable) {
  TestBytes omitted = Header(kPtrEnc, kPeOmit, kTableEnc, 0);
  absl::StatusOr<EhFrameHdr> hdr = EhFrameHdr::Parse(omitted.span(), kHdr, 8);
  ASSERT_TRUE(hdr.ok()) << hdr.status();
  EXPECT_FALSE(hdr->HasTable());
  EXPECT_EQ(hdr->fde_count(), 0u);
  EXPECT_EQ(hdr->eh_frame_vaddr(), 0x3000u);

  TestBytes zero = Header(kPtrEnc, kCountEnc, kTableEnc, 0);
  hdr = EhFrameHdr::Parse(zero.span(), kHdr, 8);
  ASSERT_TRUE(hdr.ok()) << hdr.status();
  EXPECT_FALSE(hdr->HasTable());
  EXPECT_EQ(hdr->Lookup(0x1000).status().code(), kNotFound);
}

TEST(EhFrameHdrTest, DatarelEhFramePtr) {
  TestBytes b;
  b.U8(1).U8(kPeDatarel | kPeUdata4).U8(kPeOmit).U8(kPeOmit).U32(0x800);
  absl::StatusOr<EhFrameHdr> hdr = EhFrameHdr::Parse(b.span(), kHdr, 8);
  ASSERT_TRUE(hdr.ok()) << hdr.status();
  EXPECT_EQ(hdr->eh_frame_vaddr(), kHdr + 0x800);
}

TEST(EhFrameHdrTest, WrongVersion) {
  for (uint8_t version : {0, 2, 255}) {
    TestBytes b = Header(kPtrEnc, kCountEnc, kTableEnc, 0);
    b.PatchU32(
        0, version | (kPtrEnc << 8) | (kCountEnc << 16) | (kTableEnc << 24));
    absl::StatusOr<EhFrameHdr> hdr = EhFrameHdr::Parse(b.span(), kHdr, 8);
    EXPECT_EQ(hdr.status().code(), kDataLoss);
    EXPECT_THAT(hdr.status().message(), HasSubstr("version"));
  }
}

TEST(EhFrameHdrTest, TruncatedHeaders) {
  EXPECT_EQ(EhFrameHdr::Parse({}, kHdr, 8).status().code(), kDataLoss);
  TestBytes three;
  three.U8(1).U8(kPtrEnc).U8(kCountEnc);
  EXPECT_EQ(EhFrameHdr::Parse(three.span(), kHdr, 8).status().code(),
            kDataLoss);
  TestBytes short_ptr;
  short_ptr.U8(1).U8(kPtrEnc).U8(kCountEnc).U8(kTableEnc).U16(0);
  EXPECT_EQ(EhFrameHdr::Parse(short_ptr.span(), kHdr, 8).status().code(),
            kDataLoss);
  TestBytes short_count;
  short_count.U8(1).U8(kPtrEnc).U8(kCountEnc).U8(kTableEnc).U32(0).U8(1);
  EXPECT_EQ(EhFrameHdr::Parse(short_count.span(), kHdr, 8).status().code(),
            kDataLoss);
}

TEST(EhFrameHdrTest, UnusableHeaderEncodings) {
  for (uint8_t enc :
       {kPeOmit, uint8_t{kPeTextrel | kPeSdata4},
        uint8_t{kPeIndirect | kPePcrel | kPeSdata4}, uint8_t{0x0e}}) {
    TestBytes b;
    b.U8(1).U8(enc).U8(kPeOmit).U8(kPeOmit).U64(0);
    EXPECT_EQ(EhFrameHdr::Parse(b.span(), kHdr, 8).status().code(), kDataLoss)
        << "encoding 0x" << std::hex << int{enc};
  }
  TestBytes b;
  b.U8(1).U8(kPtrEnc).U8(kPeUdata4).U8(kTableEnc).U32(0).U32(0);
  EXPECT_EQ(EhFrameHdr::Parse(b.span(), kHdr, 3).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(EhFrameHdrTest, TableMustFit) {
  // A count near 2^32 (or, signed, near 2^64) must not be multiplied out.
  TestBytes huge = Header(kPtrEnc, kCountEnc, kTableEnc, 0xffffffffu);
  huge.Zeros(64);
  absl::StatusOr<EhFrameHdr> hdr = EhFrameHdr::Parse(huge.span(), kHdr, 8);
  EXPECT_EQ(hdr.status().code(), kDataLoss);
  EXPECT_THAT(hdr.status().message(), HasSubstr("4294967295"));

  TestBytes negative = Header(kPtrEnc, kPeSdata4, kTableEnc, 0xfffffffeu);
  negative.Zeros(64);
  EXPECT_EQ(EhFrameHdr::Parse(negative.span(), kHdr, 8).status().code(),
            kDataLoss);

  TestBytes huge8;
  huge8.U8(1).U8(kPtrEnc).U8(kPeUdata8).U8(kTableEnc).S32(0);
  huge8.U64(0x2000000000000001).Zeros(16);
  EXPECT_EQ(EhFrameHdr::Parse(huge8.span(), kHdr, 8).status().code(),
            kDataLoss);

  // One byte short of the last entry.
  TestBytes short_table = Header(kPtrEnc, kCountEnc, kTableEnc, 2);
  short_table.Zeros(15);
  EXPECT_EQ(EhFrameHdr::Parse(short_table.span(), kHdr, 8).status().code(),
            kDataLoss);
  short_table.Zeros(1);
  EXPECT_TRUE(EhFrameHdr::Parse(short_table.span(), kHdr, 8).ok());
}

}  // namespace
}  // namespace unwindd::unwinder
