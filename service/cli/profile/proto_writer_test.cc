#include "service/cli/profile/proto_writer.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "gtest/gtest.h"

namespace unwindd::profile {
namespace {

// Hex of the bytes, for readable failures: "08 96 01".
std::string Hex(const std::string& bytes) {
  std::string out;
  for (unsigned char c : bytes) {
    if (!out.empty()) out.push_back(' ');
    out += absl::BytesToHexString(std::string(1, static_cast<char>(c)));
  }
  return out;
}

std::string VarintHex(uint64_t v) {
  std::string out;
  AppendVarint(v, &out);
  return Hex(out);
}

TEST(ProtoWriterTest, Varints) {
  EXPECT_EQ(VarintHex(0), "00");
  EXPECT_EQ(VarintHex(1), "01");
  EXPECT_EQ(VarintHex(127), "7f");
  EXPECT_EQ(VarintHex(128), "80 01");
  EXPECT_EQ(VarintHex(150), "96 01");  // the encoding guide's example
  EXPECT_EQ(VarintHex(300), "ac 02");
  EXPECT_EQ(VarintHex(16383), "ff 7f");
  EXPECT_EQ(VarintHex(16384), "80 80 01");
  EXPECT_EQ(VarintHex(0x7f1c2a6f16),
            "96 de a9 e1 f1 0f");  // a typical user-space address
  EXPECT_EQ(VarintHex(std::numeric_limits<uint64_t>::max()),
            "ff ff ff ff ff ff ff ff ff 01");
}

TEST(ProtoWriterTest, TagsCarryFieldNumberAndWireType) {
  ProtoWriter w;
  w.Varint(1, 150);
  EXPECT_EQ(Hex(w.data()), "08 96 01");
  w.Clear();
  w.Varint(15, 1);  // the largest field number with a one-byte tag
  EXPECT_EQ(Hex(w.data()), "78 01");
  w.Clear();
  w.Varint(16, 1);  // (16 << 3) | 0 = 128: a two-byte tag
  EXPECT_EQ(Hex(w.data()), "80 01 01");
  w.Clear();
  w.Bool(7, true);
  w.Bool(8, false);
  EXPECT_EQ(Hex(w.data()), "38 01 40 00");
}

TEST(ProtoWriterTest, NegativeInt64IsTenBytes) {
  ProtoWriter w;
  w.Int64(1, -1);
  EXPECT_EQ(Hex(w.data()), "08 ff ff ff ff ff ff ff ff ff 01");
  w.Clear();
  w.Int64(1, std::numeric_limits<int64_t>::min());
  EXPECT_EQ(Hex(w.data()), "08 80 80 80 80 80 80 80 80 80 01");
  w.Clear();
  w.Int64(1, 2);
  EXPECT_EQ(Hex(w.data()), "08 02");
}

TEST(ProtoWriterTest, LengthDelimited) {
  ProtoWriter w;
  w.Bytes(2, "testing");  // the encoding guide's example
  EXPECT_EQ(Hex(w.data()), "12 07 74 65 73 74 69 6e 67");
  w.Clear();
  w.Bytes(6, "");  // an empty string is still written (string_table[0])
  EXPECT_EQ(Hex(w.data()), "32 00");
  w.Clear();
  w.Bytes(1, std::string(300, 'x'));
  ASSERT_EQ(w.data().size(), 1 + 2 + 300u);
  EXPECT_EQ(Hex(w.data().substr(0, 3)), "0a ac 02");
}

TEST(ProtoWriterTest, EmbeddedMessage) {
  ProtoWriter sub;
  sub.Varint(1, 150);
  ProtoWriter w;
  w.Message(3, sub);  // the encoding guide's Test3 example
  EXPECT_EQ(Hex(w.data()), "1a 03 08 96 01");
}

TEST(ProtoWriterTest, Packed) {
  ProtoWriter w;
  const uint64_t values[] = {3, 270, 86942};  // the encoding guide's example
  w.PackedVarints(4, values);
  EXPECT_EQ(Hex(w.data()), "22 06 03 8e 02 9e a7 05");
  w.Clear();
  const int64_t signed_values[] = {1, -1};
  w.PackedInt64s(2, signed_values);
  EXPECT_EQ(Hex(w.data()), "12 0b 01 ff ff ff ff ff ff ff ff ff 01");
  w.Clear();
  w.PackedVarints(1, {});
  w.PackedInt64s(2, {});
  EXPECT_EQ(w.data(), "");
}

TEST(ProtoWriterTest, DefaultsLeftOut) {
  ProtoWriter w;
  w.VarintIfNonZero(1, 0);
  w.Int64IfNonZero(2, 0);
  EXPECT_EQ(w.data(), "");
  w.VarintIfNonZero(1, 5);
  w.Int64IfNonZero(2, -2);
  EXPECT_EQ(Hex(w.data()), "08 05 10 fe ff ff ff ff ff ff ff ff 01");
  EXPECT_EQ(w.Release().size(), 13u);
  EXPECT_EQ(w.data(), "");
}

}  // namespace
}  // namespace unwindd::profile
