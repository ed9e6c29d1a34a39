// Issue 14 "bounded work", for the CFI parsers: the worst inputs a hostile
// file can give .eh_frame_hdr, .eh_frame and DWARF expressions must end in a
// clear error, each after work bounded by the input's size or a named limit
// (the error is what is checked; the time is only a sanity net).
#include <chrono>
#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "arch/arch.h"
#include "arch/register_set.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "memory/testing/map_memory.h"
#include "unwinder/cfi/apply.h"
#include "unwinder/cfi/cfi_section.h"
#include "unwinder/cfi/dwarf_expr.h"
#include "unwinder/cfi/eh_frame_hdr.h"
#include "unwinder/cfi/encoding.h"
#include "unwinder/cfi/row.h"
#include "unwinder/cfi/test_bytes.h"

namespace unwindd::unwinder {
namespace {

using ::testing::HasSubstr;

class Stopwatch {
 public:
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         start_)
        .count();
  }

 private:
  std::chrono::steady_clock::time_point start_ =
      std::chrono::steady_clock::now();
};

// LSB §10.6.2: version 1, eh_frame_ptr pcrel|sdata4, fde_count udata4,
// table datarel|sdata4 (8-byte entries), then two real entries where 2^31
// are claimed (16 GiB of table).
TEST(CfiBoundsTest, EhFrameHdrClaiming2To31EntriesIsRejectedAtParse) {
  TestBytes hdr;
  hdr.Raw({1, kPePcrel | kPeSdata4, kPeUdata4, kPeDatarel | kPeSdata4})
      .S32(0x100)
      .U32(0x80000000u)
      .S32(-0x100).S32(0x100).S32(0x10).S32(0x120);
  Stopwatch w;
  absl::StatusOr<EhFrameHdr> h = EhFrameHdr::Parse(hdr.span(), 0x2000, 8);
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(h.status().message(), HasSubstr("2147483648 entries"));
  EXPECT_LT(w.seconds(), 2);
}

TEST(CfiBoundsTest, EhFrameHdrCountOf2To64Minus1IsRejectedToo) {
  TestBytes hdr;
  hdr.Raw({1, kPePcrel | kPeSdata4, kPeUdata8, kPeDatarel | kPeSdata4})
      .S32(0x100)
      .U64(~uint64_t{0})
      .S32(-0x100).S32(0x100);
  absl::StatusOr<EhFrameHdr> h = EhFrameHdr::Parse(hdr.span(), 0x2000, 8);
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.status().code(), absl::StatusCode::kDataLoss);
}

// A CIE, then an FDE whose length field claims ~4 GiB (32-bit, just below
// the reserved range) or 4 GiB exactly (64-bit DWARF), in a small section.
TestBytes SectionWithHugeFde(bool dwarf64, size_t* fde_offset) {
  TestBytes cie;
  cie.U8(1).Str("zR").Uleb(1).Sleb(-8).U8(16).Uleb(1).U8(kPeAbsptr)
      .Raw({0x0c, 7, 8, 0x90, 1});
  TestBytes section;
  AppendEhCie(section, cie);
  *fde_offset = section.size();
  if (dwarf64) {
    section.U32(0xffffffffu).U64(uint64_t{1} << 32);
  } else {
    section.U32(0xffffffefu);
  }
  section.U64(0).U64(0x401000).U64(0x100).Zeros(64);
  return section;
}

TEST(CfiBoundsTest, FourGibFdeLengthIsDataLossAndEndsTheIndex) {
  for (bool dwarf64 : {false, true}) {
    size_t fde = 0;
    TestBytes bytes = SectionWithHugeFde(dwarf64, &fde);
    CfiSection s(CfiKind::kEhFrame, bytes.span(), 0x1000, arch::Arch::kX86_64,
                 EncodingBases{});
    Stopwatch w;
    absl::StatusOr<Fde> f = s.ParseFdeAt(fde);
    ASSERT_FALSE(f.ok()) << dwarf64;
    EXPECT_EQ(f.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(f.status().message(), HasSubstr("runs past the section end"));
    EXPECT_EQ(s.IndexedFdeCount(), 0u);
    EXPECT_TRUE(absl::IsNotFound(s.FindFde(0x401000).status()));
    EXPECT_LT(w.seconds(), 2);
  }
}

// DW_OP_skip -3 jumps back onto itself forever without touching the stack:
// only the operation budget ends it.
TEST(CfiBoundsTest, ExpressionLoopStopsAtTheOperationBudget) {
  const uint8_t loop[] = {0x2f, 0xfd, 0xff};  // DW_OP_skip -3
  arch::RegisterSet regs(arch::Arch::kX86_64);
  regs.set_sp(0x7ffd0000);
  memory::testing::MapMemory mem;
  ExpressionContext ctx{&regs, &mem, arch::Arch::kX86_64, 0};
  Stopwatch w;
  absl::StatusOr<uint64_t> v = EvaluateExpression(loop, ctx, 0x1000);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(v.status().message(),
              HasSubstr(absl::StrCat("more than ", kMaxExpressionOps,
                                     " operations")));
  EXPECT_LT(w.seconds(), 2);
}

// A row whose CFA and every register rule is that loop: the budget holds
// per expression, so one ApplyRow is bounded by (1 + registers) budgets.
TEST(CfiBoundsTest, RowOfLoopingExpressionsIsBounded) {
  static const uint8_t loop[] = {0x2f, 0xfd, 0xff};
  Row row;
  row.cfa.kind = CfaRule::Kind::kExpression;
  row.cfa.expr = loop;
  for (RegisterRule& r : row.regs) {
    r.kind = RegisterRule::Kind::kValExpression;
    r.expr = loop;
  }
  row.return_address_register = 16;
  arch::RegisterSet regs(arch::Arch::kX86_64);
  for (int r = 0; r < 17; ++r) regs.Set(r, 0x1000 * (r + 1));
  memory::testing::MapMemory mem;
  Stopwatch w;
  absl::StatusOr<ApplyResult> a = ApplyRow(row, regs, mem, 0);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_LT(w.seconds(), 2);
}

}  // namespace
}  // namespace unwindd::unwinder
