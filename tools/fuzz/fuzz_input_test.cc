#include "tools/fuzz/fuzz_input.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace unwindd::fuzz {
namespace {

TEST(FuzzInputTest, ReadsFieldsInOrderLittleEndian) {
  const std::vector<uint8_t> d = {1, 0x34, 0x12, 9, 8, 7};
  FuzzInput in(d.data(), d.size());
  EXPECT_EQ(in.U8(), 1);
  EXPECT_EQ(in.U16(), 0x1234);
  absl::Span<const uint8_t> b = in.Bytes(2);
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0], 9);
  EXPECT_EQ(in.Rest().size(), 1u);
  EXPECT_EQ(in.remaining(), 0u);
}

TEST(FuzzInputTest, PastTheEndReadsZerosAndEmptySpans) {
  const std::vector<uint8_t> d = {0xff};
  FuzzInput in(d.data(), d.size());
  EXPECT_EQ(in.U32(), 0xffu);  // one byte, then zeros
  EXPECT_EQ(in.U64(), 0u);
  EXPECT_TRUE(in.Bytes(10).empty());
  EXPECT_FALSE(in.Bool());
}

}  // namespace
}  // namespace unwindd::fuzz
