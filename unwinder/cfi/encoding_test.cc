#include "unwinder/cfi/encoding.h"

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "memory/byte_reader.h"
#include "unwinder/cfi/test_bytes.h"

namespace unwindd::unwinder {
namespace {

using memory::ByteReader;

// Reads one pointer from `bytes` placed at file address `base`.
absl::StatusOr<EncodedPointer> Read(const TestBytes& bytes, uint8_t encoding,
                                    int address_size = 8, uint64_t base = 0,
                                    EncodingBases bases = {}) {
  ByteReader r(bytes.span(), base);
  return ReadEncodedPointer(r, encoding, address_size, bases);
}

uint64_t Value(const TestBytes& bytes, uint8_t encoding, int address_size = 8,
               uint64_t base = 0, EncodingBases bases = {}) {
  absl::StatusOr<EncodedPointer> p =
      Read(bytes, encoding, address_size, base, bases);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? p->value : 0xdeadbeef;
}

TEST(EncodingTest, AbsptrUsesAddressSize) {
  TestBytes b;
  b.U64(0x1122334455667788);
  EXPECT_EQ(Value(b, kPeAbsptr, 8), 0x1122334455667788u);
  EXPECT_EQ(Value(b, kPeAbsptr, 4), 0x55667788u);

  ByteReader r(b.span());
  ASSERT_TRUE(ReadEncodedPointer(r, kPeAbsptr, 4, {}).ok());
  EXPECT_EQ(r.offset(), 4u);
}

TEST(EncodingTest, UnsignedFormats) {
  EXPECT_EQ(Value(TestBytes().Uleb(624485), kPeUleb128), 624485u);
  EXPECT_EQ(Value(TestBytes().U16(0xfffe), kPeUdata2), 0xfffeu);
  EXPECT_EQ(Value(TestBytes().U32(0xfffffffe), kPeUdata4), 0xfffffffeu);
  EXPECT_EQ(Value(TestBytes().U64(0xfffffffffffffffe), kPeUdata8),
            0xfffffffffffffffeu);
}

TEST(EncodingTest, SignedFormatsSignExtend) {
  EXPECT_EQ(Value(TestBytes().S64(-2), kPeSigned, 8), uint64_t(-2));
  // Signed absptr with 4-byte addresses: 4 bytes, then truncated to 32 bits.
  EXPECT_EQ(Value(TestBytes().S32(-2), kPeSigned, 4), 0xfffffffeu);
  EXPECT_EQ(Value(TestBytes().Sleb(-123456), kPeSleb128), uint64_t(-123456));
  EXPECT_EQ(Value(TestBytes().S16(-3), kPeSdata2), uint64_t(-3));
  EXPECT_EQ(Value(TestBytes().S32(-4), kPeSdata4), uint64_t(-4));
  EXPECT_EQ(Value(TestBytes().S64(-5), kPeSdata8), uint64_t(-5));
  EXPECT_EQ(Value(TestBytes().S16(0x7fff), kPeSdata2), 0x7fffu);
}

TEST(EncodingTest, PcrelIsRelativeToTheFieldItself) {
  // The field sits at offset 4 of a buffer whose first byte is at 0x400000:
  // its own address is 0x400004.
  TestBytes b;
  b.U32(0).S32(-0x104);
  ByteReader r(b.span(), 0x400000);
  ASSERT_TRUE(r.Skip(4).ok());
  absl::StatusOr<EncodedPointer> p =
      ReadEncodedPointer(r, kPePcrel | kPeSdata4, 8, {});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->value, 0x400004u - 0x104u);
  EXPECT_FALSE(p->indirect);

  EXPECT_EQ(Value(TestBytes().U16(0x10), kPePcrel | kPeUdata2, 8, 0x2000),
            0x2010u);
  EXPECT_EQ(Value(TestBytes().Uleb(0x80), kPePcrel | kPeUleb128, 8, 0x2000),
            0x2080u);
}

TEST(EncodingTest, TextDataFuncRelativeUseTheirBases) {
  EncodingBases bases{.text = 0x1000, .data = 0x20000, .func = 0x300000};
  TestBytes b;
  b.S32(-0x10);
  EXPECT_EQ(Value(b, kPeTextrel | kPeSdata4, 8, 0x9999, bases), 0xff0u);
  EXPECT_EQ(Value(b, kPeDatarel | kPeSdata4, 8, 0x9999, bases), 0x1fff0u);
  EXPECT_EQ(Value(b, kPeFuncrel | kPeSdata4, 8, 0x9999, bases), 0x2ffff0u);
}

TEST(EncodingTest, AlignedSkipsToTheNextBoundaryOfTheFileAddress) {
  // Cursor at file address 0x1003: the pointer is at 0x1008.
  TestBytes b;
  b.Zeros(5).U64(0xabcdef0123456789);
  ByteReader r(b.span(), 0x1003);
  absl::StatusOr<EncodedPointer> p = ReadEncodedPointer(r, kPeAligned, 8, {});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->value, 0xabcdef0123456789u);
  EXPECT_EQ(r.offset(), 13u);

  // 4-byte addresses align to 4 and read 4 bytes.
  TestBytes b4;
  b4.Zeros(1).U32(0x8badf00d);
  ByteReader r4(b4.span(), 0x2003);
  p = ReadEncodedPointer(r4, kPeAligned, 4, {});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->value, 0x8badf00du);

  // Already aligned: no padding.
  EXPECT_EQ(Value(TestBytes().U64(7), kPeAligned, 8, 0x1000), 7u);
}

TEST(EncodingTest, AlignedErrors) {
  // Padding runs past the end.
  EXPECT_EQ(Read(TestBytes().Zeros(3), kPeAligned, 8, 0x1001).status().code(),
            absl::StatusCode::kDataLoss);
  // Aligned only makes sense for a native pointer.
  EXPECT_EQ(Read(TestBytes().U64(1), kPeAligned | kPeUdata4).status().code(),
            absl::StatusCode::kDataLoss);
}

TEST(EncodingTest, IndirectFlagIsReportedNotFollowed) {
  TestBytes b;
  b.S32(0x20);
  absl::StatusOr<EncodedPointer> p =
      Read(b, kPeIndirect | kPePcrel | kPeSdata4, 8, 0x5000);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->value, 0x5020u);  // the address of the pointer
  EXPECT_TRUE(p->indirect);
}

TEST(EncodingTest, FourByteAddressesTruncate) {
  // pcrel wraps below zero in 32 bits, not 64.
  EXPECT_EQ(Value(TestBytes().S32(-0x20), kPePcrel | kPeSdata4, 4, 0x10),
            0xfffffff0u);
  EXPECT_EQ(Value(TestBytes().U64(0x1234567890), kPeUdata8, 4), 0x34567890u);
  EncodingBases bases{.data = 0xfffffff0};
  EXPECT_EQ(Value(TestBytes().U32(0x20), kPeDatarel | kPeUdata4, 4, 0, bases),
            0x10u);
}

TEST(EncodingTest, OmitIsInvalidArgumentAndDoesNotMove) {
  TestBytes b;
  b.U64(1);
  ByteReader r(b.span());
  EXPECT_EQ(ReadEncodedPointer(r, kPeOmit, 8, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.offset(), 0u);
}

TEST(EncodingTest, UnknownFormatsAndApplicationsAreDataLoss) {
  TestBytes b;
  b.U64(1);
  for (uint8_t enc :
       {0x05, 0x06, 0x07, 0x0d, 0x0e, 0x0f, 0x60, 0x70, 0x73, 0x1f}) {
    ByteReader r(b.span());
    absl::StatusOr<EncodedPointer> p = ReadEncodedPointer(r, enc, 8, {});
    EXPECT_EQ(p.status().code(), absl::StatusCode::kDataLoss)
        << "encoding 0x" << std::hex << int{enc};
    EXPECT_EQ(r.offset(), 0u);
  }
}

TEST(EncodingTest, TruncatedValuesAreDataLoss) {
  EXPECT_EQ(Read(TestBytes().U8(1), kPeUdata2).status().code(),
            absl::StatusCode::kDataLoss);
  EXPECT_EQ(Read(TestBytes().U16(1), kPeSdata4).status().code(),
            absl::StatusCode::kDataLoss);
  EXPECT_EQ(Read(TestBytes().U32(1), kPeAbsptr, 8).status().code(),
            absl::StatusCode::kDataLoss);
  EXPECT_EQ(Read(TestBytes().U8(0x80), kPeUleb128).status().code(),
            absl::StatusCode::kDataLoss);
  EXPECT_EQ(Read(TestBytes(), kPeSleb128).status().code(),
            absl::StatusCode::kDataLoss);
}

TEST(EncodingTest, BadAddressSizeIsInvalidArgument) {
  EXPECT_EQ(Read(TestBytes().U64(1), kPeAbsptr, 2).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(EncodingTest, EncodedPointerSize) {
  EXPECT_EQ(EncodedPointerSize(kPeAbsptr, 8), 8);
  EXPECT_EQ(EncodedPointerSize(kPeAbsptr, 4), 4);
  EXPECT_EQ(EncodedPointerSize(kPeSigned, 4), 4);
  EXPECT_EQ(EncodedPointerSize(kPeUdata2, 8), 2);
  EXPECT_EQ(EncodedPointerSize(kPeSdata2, 8), 2);
  EXPECT_EQ(EncodedPointerSize(kPeDatarel | kPeSdata4, 8), 4);
  EXPECT_EQ(EncodedPointerSize(kPePcrel | kPeUdata4, 8), 4);
  EXPECT_EQ(EncodedPointerSize(kPeUdata8, 4), 8);
  EXPECT_EQ(EncodedPointerSize(kPeSdata8, 4), 8);
  EXPECT_EQ(EncodedPointerSize(kPeIndirect | kPePcrel | kPeSdata4, 8), 4);
  EXPECT_EQ(EncodedPointerSize(kPeUleb128, 8), 0);
  EXPECT_EQ(EncodedPointerSize(kPeSleb128, 8), 0);
  EXPECT_EQ(EncodedPointerSize(kPeAligned, 8), 0);
  EXPECT_EQ(EncodedPointerSize(kPeOmit, 8), 0);
  EXPECT_EQ(EncodedPointerSize(0x05, 8), 0);
  EXPECT_EQ(EncodedPointerSize(kPeAbsptr, 3), 0);
}

}  // namespace
}  // namespace unwindd::unwinder
