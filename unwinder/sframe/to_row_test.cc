// SFrame §3: FREs as Rows, per ABI (AMD64: fixed RA offset, optional FP;
// AArch64: RA and FP offsets, the mangled-RA bit), the v3 flexible FDEs, and
// the outermost-frame FRE; then applied to registers and a stack, so the
// rows are checked by the caller registers they give.
#include "unwinder/sframe/to_row.h"

#include "gtest/gtest.h"
#include "memory/testing/map_memory.h"
#include "unwinder/cfi/apply.h"
#include "unwinder/sframe/section.h"
#include "unwinder/sframe/testing/sframe_builder.h"

namespace unwindd::unwinder::sframe {
namespace {

using Kind = RegisterRule::Kind;
using testing::BuildSframe;
using testing::FdeSpec;
using testing::FreSpec;
using testing::SectionSpec;

constexpr uint64_t kFunc = 0x401000;

// The row for kFunc + 2 of a one-function section with FRE `fre`.
absl::StatusOr<Row> RowOf(SectionSpec s, FreSpec fre,
                          uint8_t fde_type = kFdeTypeDefault) {
  s.fdes = {FdeSpec{.func_start = kFunc,
                    .size = 0x100,
                    .fde_type = fde_type,
                    .fres = {{.start = 0, .words = {8}}, fre}}};
  s.fdes[0].fres[1].start = 2;
  std::vector<uint8_t> b = BuildSframe(s);
  absl::StatusOr<std::unique_ptr<SframeSection>> sec =
      SframeSection::Parse(b, s.vaddr);
  if (!sec.ok()) return sec.status();
  absl::StatusOr<Row> row = (*sec)->FindRow(kFunc + 2);
  // Expression spans point into the section's arena: keep it alive.
  static std::vector<std::unique_ptr<SframeSection>> keep;
  keep.push_back(*std::move(sec));
  return row;
}

SectionSpec Amd64(uint8_t version = kVersion2) {
  SectionSpec s;
  s.version = version;
  return s;
}

SectionSpec AArch64(uint8_t version = kVersion2, bool big = false) {
  SectionSpec s;
  s.version = version;
  s.abi = big ? kAbiAArch64BigEndian : kAbiAArch64LittleEndian;
  s.big_endian = big;
  s.fixed_ra = 0;
  return s;
}

TEST(ToRowTest, Amd64SpBased) {
  absl::StatusOr<Row> r = RowOf(Amd64(), {.base_sp = true, .words = {24}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->cfa.kind, CfaRule::Kind::kRegOffset);
  EXPECT_EQ(r->cfa.reg, 7);  // rsp
  EXPECT_EQ(r->cfa.offset, 24);
  EXPECT_EQ(r->return_address_register, 16);
  EXPECT_EQ(r->regs[16].kind, Kind::kOffset);  // header: RA at CFA-8
  EXPECT_EQ(r->regs[16].value, -8);
  EXPECT_EQ(r->regs[6].kind, Kind::kUnspecified);  // rbp untouched
  EXPECT_EQ(r->pc_lo, kFunc + 2);
  EXPECT_EQ(r->pc_hi, kFunc + 0x100);
  EXPECT_FALSE(r->ra_signed);
}

TEST(ToRowTest, Amd64FpBasedWithSavedFp) {
  absl::StatusOr<Row> r =
      RowOf(Amd64(), {.base_sp = false, .words = {16, -16}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->cfa.reg, 6);  // rbp
  EXPECT_EQ(r->cfa.offset, 16);
  EXPECT_EQ(r->regs[6].kind, Kind::kOffset);
  EXPECT_EQ(r->regs[6].value, -16);
}

TEST(ToRowTest, Amd64FixedFpOffsetFromTheHeader) {
  SectionSpec s = Amd64();
  s.fixed_fp = -16;
  absl::StatusOr<Row> r = RowOf(s, {.base_sp = false, .words = {16}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->regs[6].kind, Kind::kOffset);
  EXPECT_EQ(r->regs[6].value, -16);
}

TEST(ToRowTest, AArch64BeforeTheFrameRecordRaIsInLr) {
  absl::StatusOr<Row> r = RowOf(AArch64(), {.base_sp = true, .words = {0}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->cfa.reg, 31);
  EXPECT_EQ(r->return_address_register, 30);
  EXPECT_EQ(r->regs[30].kind, Kind::kUnspecified);
  EXPECT_EQ(r->regs[29].kind, Kind::kUnspecified);
}

TEST(ToRowTest, AArch64FrameRecordAndMangledRa) {
  for (bool big : {false, true}) {
    absl::StatusOr<Row> r =
        RowOf(AArch64(kVersion3, big), {.base_sp = true,
                                        .words = {32, -24, -32},
                                        .word_size = 2,
                                        .mangled_ra = true});
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->cfa.offset, 32);
    EXPECT_EQ(r->regs[30].kind, Kind::kOffset);
    EXPECT_EQ(r->regs[30].value, -24);
    EXPECT_EQ(r->regs[29].kind, Kind::kOffset);
    EXPECT_EQ(r->regs[29].value, -32);
    EXPECT_TRUE(r->ra_signed);
  }
}

TEST(ToRowTest, MangledBitMeansNothingOnAmd64) {
  absl::StatusOr<Row> r = RowOf(Amd64(), {.words = {8}, .mangled_ra = true});
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->ra_signed);
}

TEST(ToRowTest, NoWordsIsTheOutermostFrame) {
  for (SectionSpec s : {Amd64(), AArch64()}) {
    absl::StatusOr<Row> r = RowOf(s, {.words = {}});
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->regs[r->return_address_register].kind, Kind::kUndefined);
  }
}

TEST(ToRowTest, TooManyWordsIsDataLoss) {
  EXPECT_TRUE(
      absl::IsDataLoss(RowOf(Amd64(), {.words = {8, -16, 4}}).status()));
  EXPECT_TRUE(
      absl::IsDataLoss(RowOf(AArch64(), {.words = {8, -8, -16, 4}}).status()));
}

TEST(ToRowTest, UnsupportedAbi) {
  SectionSpec s = Amd64();
  s.fdes = {FdeSpec{.func_start = kFunc, .size = 4, .fres = {{.words = {8}}}}};
  std::vector<uint8_t> b = BuildSframe(s);
  Header h = *ParseHeader(b);
  h.abi = kAbiS390xBigEndian;
  Fde fde = *ReadFde(b, h, s.vaddr, 0);
  Fre fre;
  fre.num_words = 1;
  ExprArena arena;
  EXPECT_TRUE(
      absl::IsUnimplemented(FreToRow(h, fde, fre, 0, 4, arena).status()));
}

// v3 flex control word: regnum << 3 | deref << 1 | reg_p.
constexpr int64_t Ctl(int reg, bool deref) {
  return reg << 3 | (deref ? 2 : 0) | 1;
}

TEST(ToRowTest, FlexDrapPrologue) {
  // x86-64 stack realignment (gcc's DRAP): CFA = r10 + 0, then *(rbp - 8);
  // RA: padding (the header's fixed CFA-8); FP = *(rbp + 0).
  absl::StatusOr<Row> r =
      RowOf(Amd64(kVersion3), {.words = {Ctl(10, false), 0}}, kFdeTypeFlex);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->cfa.kind, CfaRule::Kind::kRegOffset);
  EXPECT_EQ(r->cfa.reg, 10);
  EXPECT_EQ(r->regs[16].value, -8);

  r = RowOf(Amd64(kVersion3), {.words = {Ctl(6, true), -8, 0, Ctl(6, true), 0}},
            kFdeTypeFlex);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->cfa.kind, CfaRule::Kind::kExpression);
  EXPECT_EQ(std::vector<uint8_t>(r->cfa.expr.begin(), r->cfa.expr.end()),
            (std::vector<uint8_t>{0x76, 0x78, 0x06}));  // breg6 -8; deref
  EXPECT_EQ(r->regs[16].kind, Kind::kOffset);
  EXPECT_EQ(r->regs[6].kind, Kind::kExpression);  // value at rbp + 0
  EXPECT_EQ(
      std::vector<uint8_t>(r->regs[6].expr.begin(), r->regs[6].expr.end()),
      (std::vector<uint8_t>{0x76, 0x00}));
}

TEST(ToRowTest, FlexRegisterRules) {
  // RA = *(CFA - 8) (reg_p 0), FP = rbx (no deref, offset 0), 2-byte words.
  absl::StatusOr<Row> r = RowOf(
      Amd64(kVersion3),
      {.words = {Ctl(7, false), 16, 0x8 /*reg_p 0*/, -8, Ctl(3, false), 0},
       .word_size = 2},
      kFdeTypeFlex);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->cfa.reg, 7);
  EXPECT_EQ(r->regs[16].kind, Kind::kOffset);
  EXPECT_EQ(r->regs[16].value, -8);
  EXPECT_EQ(r->regs[6].kind, Kind::kRegister);
  EXPECT_EQ(r->regs[6].value, 3);
  // reg + offset without deref is a value expression.
  r = RowOf(Amd64(kVersion3),
            {.words = {Ctl(7, false), 16, 0, Ctl(3, false), 32}}, kFdeTypeFlex);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->regs[6].kind, Kind::kValExpression);
}

TEST(ToRowTest, MalformedFlexRules) {
  // CFA not register-based; a register the arch does not have; an RA control
  // word without its offset.
  EXPECT_TRUE(absl::IsDataLoss(
      RowOf(Amd64(kVersion3), {.words = {0, 8}}, kFdeTypeFlex).status()));
  EXPECT_TRUE(absl::IsDataLoss(
      RowOf(Amd64(kVersion3), {.words = {Ctl(30, false), 8}}, kFdeTypeFlex)
          .status()));
  EXPECT_TRUE(absl::IsDataLoss(
      RowOf(Amd64(kVersion3), {.words = {Ctl(7, false), 8, Ctl(6, true)}},
            kFdeTypeFlex)
          .status()));
  EXPECT_TRUE(absl::IsDataLoss(
      RowOf(Amd64(kVersion3), {.words = {Ctl(7, false)}}, kFdeTypeFlex)
          .status()));
  EXPECT_TRUE(absl::IsDataLoss(
      RowOf(Amd64(kVersion3),
            {.words = {Ctl(7, false), 8, 0, Ctl(6, false), 0, 1}}, kFdeTypeFlex)
          .status()));
}

// The rows do what the CFI would: one frame up from known registers.
TEST(ToRowTest, AppliedRowsRecoverTheCaller) {
  memory::testing::MapMemory stack;
  const uint64_t sp = 0x7ffd0000;
  stack.PutLe(sp + 16, 0x401234, 8);   // return address at CFA - 8
  stack.PutLe(sp + 8, 0x7ffd0100, 8);  // saved rbp at CFA - 16
  absl::StatusOr<Row> r =
      RowOf(Amd64(), {.base_sp = false, .words = {16, -16}});
  ASSERT_TRUE(r.ok());
  arch::RegisterSet regs(arch::Arch::kX86_64);
  regs.set_sp(sp);
  regs.Set(6, sp + 8);  // rbp
  regs.set_pc(kFunc + 2);
  absl::StatusOr<ApplyResult> a = ApplyRow(*r, regs, stack, 0);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->cfa, sp + 24);
  EXPECT_EQ(a->caller.pc(), 0x401234u);
  EXPECT_EQ(a->caller.sp(), sp + 24);
  EXPECT_EQ(a->caller.Get(6), 0x7ffd0100u);

  // DRAP: CFA = *(rbp - 8), FP = *(rbp + 0).
  stack.PutLe(0x7ffd0200 - 8, sp + 0x40, 8);
  stack.PutLe(0x7ffd0200, 0x7ffd0300, 8);
  stack.PutLe(sp + 0x40 - 8, 0x405678, 8);
  r = RowOf(Amd64(kVersion3), {.words = {Ctl(6, true), -8, 0, Ctl(6, true), 0}},
            kFdeTypeFlex);
  ASSERT_TRUE(r.ok());
  regs.Set(6, 0x7ffd0200);
  a = ApplyRow(*r, regs, stack, 0);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->cfa, sp + 0x40);
  EXPECT_EQ(a->caller.pc(), 0x405678u);
  EXPECT_EQ(a->caller.Get(6), 0x7ffd0300u);
}

}  // namespace
}  // namespace unwindd::unwinder::sframe
