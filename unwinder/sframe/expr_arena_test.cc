// The DWARF expressions made for SFrame v3 flexible rules, and reading them
// back.
#include "unwinder/sframe/expr_arena.h"

#include <vector>

#include "gtest/gtest.h"

namespace unwindd::unwinder::sframe {
namespace {

std::vector<uint8_t> Bytes(absl::Span<const uint8_t> s) {
  return std::vector<uint8_t>(s.begin(), s.end());
}

TEST(ExprArenaTest, EncodesBregAndDeref) {
  ExprArena arena;
  EXPECT_EQ(Bytes(*arena.Breg(6, -8, true)),
            (std::vector<uint8_t>{0x76, 0x78, 0x06}));
  EXPECT_EQ(Bytes(*arena.Breg(7, 300)),
            (std::vector<uint8_t>{0x77, 0xac, 0x02}));
  EXPECT_EQ(Bytes(*arena.Breg(40, -1)), (std::vector<uint8_t>{0x92, 40, 0x7f}));
}

TEST(ExprArenaTest, EqualRulesShareOneExpression) {
  ExprArena arena;
  absl::Span<const uint8_t> a = *arena.Breg(10, 0);
  absl::Span<const uint8_t> b = *arena.Breg(10, 0);
  EXPECT_EQ(a.data(), b.data());
  EXPECT_NE(a.data(), arena.Breg(10, 0, true)->data());
}

TEST(ExprArenaTest, ParseBregRoundTrips) {
  ExprArena arena;
  for (uint32_t reg : {0u, 6u, 31u, 32u, 1000u}) {
    for (int64_t off : {int64_t{0}, int64_t{-8}, int64_t{64}, int64_t{-1} << 40,
                        int64_t{1} << 40}) {
      for (bool deref : {false, true}) {
        std::optional<BregRule> b = ParseBreg(*arena.Breg(reg, off, deref));
        ASSERT_TRUE(b.has_value());
        EXPECT_EQ(b->reg, reg);
        EXPECT_EQ(b->offset, off);
        EXPECT_EQ(b->deref, deref);
      }
    }
  }
}

TEST(ExprArenaTest, ParseBregRejectsOtherExpressions) {
  for (const std::vector<uint8_t>& e : std::vector<std::vector<uint8_t>>{
           {},                        // empty
           {0x76},                    // no offset
           {0x76, 0x80},              // truncated SLEB128
           {0x76, 0x00, 0x06, 0x06},  // two derefs
           {0x76, 0x00, 0x22},        // breg; plus
           {0x08, 0x10},              // DW_OP_const1u
       }) {
    EXPECT_FALSE(ParseBreg(e).has_value());
  }
}

}  // namespace
}  // namespace unwindd::unwinder::sframe
