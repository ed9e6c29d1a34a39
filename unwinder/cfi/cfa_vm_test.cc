// Byte-level tests of the CFA program interpreter (DWARF 5 §6.4.2): every
// opcode alone, location/row-range semantics, state save/restore, and the
// programs gcc and binutils emit for x86_64.
#include "unwinder/cfi/cfa_vm.h"

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "arch/arch.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "unwinder/cfi/cfi_section.h"
#include "unwinder/cfi/encoding.h"
#include "unwinder/cfi/row.h"

namespace unwindd::unwinder {
namespace {

using ::testing::HasSubstr;
using Bytes = std::vector<uint8_t>;
using Kind = RegisterRule::Kind;
using arch::Arch;

constexpr auto kDataLoss = absl::StatusCode::kDataLoss;
constexpr auto kUnimplemented = absl::StatusCode::kUnimplemented;

class CfaVmTest : public ::testing::Test {
 protected:
  CfaVmTest() {
    // A typical x86_64 .eh_frame CIE ("zR", pcrel|sdata4).
    cie_.code_alignment = 1;
    cie_.data_alignment = -8;
    cie_.return_address_register = 16;
    cie_.fde_encoding = kPePcrel | kPeSdata4;
    fde_.pc_begin = 0x1000;
    fde_.pc_end = 0x1100;
  }

  absl::StatusOr<Row> Run(const Bytes& fde_insns, uint64_t pc = 0x1000,
                          Arch arch = Arch::kX86_64) {
    fde_bytes_ = fde_insns;
    cie_.initial_instructions = cie_bytes_;
    fde_.instructions = fde_bytes_;
    fde_.cie = cie_;
    return ComputeRow(cie_, fde_, pc, arch);
  }
  Row Ok(const Bytes& fde_insns, uint64_t pc = 0x1000,
         Arch arch = Arch::kX86_64) {
    absl::StatusOr<Row> row = Run(fde_insns, pc, arch);
    EXPECT_TRUE(row.ok()) << row.status();
    return row.ok() ? *row : Row{};
  }
  absl::StatusCode Code(const Bytes& fde_insns, Arch arch = Arch::kX86_64) {
    return Run(fde_insns, 0x1000, arch).status().code();
  }

  // DW_CFA_def_cfa rsp+8; DW_CFA_offset r16 (rip), cfa-8.
  Bytes cie_bytes_ = {0x0c, 0x07, 0x08, 0x90, 0x01};
  Bytes fde_bytes_;
  Cie cie_;
  Fde fde_;
};

void ExpectCfa(const Row& row, int reg, int64_t offset) {
  EXPECT_EQ(row.cfa.kind, CfaRule::Kind::kRegOffset);
  EXPECT_EQ(row.cfa.reg, reg);
  EXPECT_EQ(row.cfa.offset, offset);
}

void ExpectRule(const Row& row, int reg, Kind kind, int64_t value = 0) {
  EXPECT_EQ(row.regs[reg].kind, kind) << "register " << reg;
  EXPECT_EQ(row.regs[reg].value, value) << "register " << reg;
}

// ---- initial state and the CIE ----

TEST_F(CfaVmTest, CieInitialRules) {
  cie_.signal_frame = true;
  Row row = Ok({});
  ExpectCfa(row, 7, 8);
  ExpectRule(row, 16, Kind::kOffset, -8);
  for (int r = 0; r < 16; ++r) ExpectRule(row, r, Kind::kUnspecified);
  EXPECT_EQ(row.pc_lo, 0x1000u);
  EXPECT_EQ(row.pc_hi, 0x1100u);
  EXPECT_EQ(row.return_address_register, 16);
  EXPECT_TRUE(row.signal_frame);
  EXPECT_FALSE(row.ra_signed);
}

TEST_F(CfaVmTest, EmptyProgramsLeaveCfaUndefined) {
  cie_bytes_ = {};
  Row row = Ok({0x00, 0x00});  // nops
  EXPECT_EQ(row.cfa.kind, CfaRule::Kind::kUndefined);
  for (int r = 0; r < arch::kMaxRegisters; ++r) {
    ExpectRule(row, r, Kind::kUnspecified);
  }
}

TEST_F(CfaVmTest, PcOutsideFde) {
  EXPECT_EQ(Run({}, 0xfff).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Run({}, 0x1100).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// ---- every opcode alone ----

TEST_F(CfaVmTest, Offset) {
  ExpectRule(Ok({0x86, 0x02}), 6, Kind::kOffset, -16);  // primary, factored
  ExpectRule(Ok({0x05, 0x03, 0x03}), 3, Kind::kOffset, -24);  // _extended
  ExpectRule(Ok({0x11, 0x03, 0x7e}), 3, Kind::kOffset, 16);   // _sf: -2*-8
  // GNU_negative_offset_extended: offset is -(uleb * data_alignment).
  ExpectRule(Ok({0x2f, 0x03, 0x02}), 3, Kind::kOffset, 16);
}

TEST_F(CfaVmTest, ValOffset) {
  ExpectRule(Ok({0x14, 0x03, 0x02}), 3, Kind::kValOffset, -16);
  ExpectRule(Ok({0x15, 0x03, 0x7f}), 3, Kind::kValOffset, 8);
}

TEST_F(CfaVmTest, UndefinedSameValueRegister) {
  ExpectRule(Ok({0x07, 0x10}), 16, Kind::kUndefined);
  ExpectRule(Ok({0x08, 0x03}), 3, Kind::kSameValue);
  ExpectRule(Ok({0x09, 0x03, 0x05}), 3, Kind::kRegister, 5);
}

TEST_F(CfaVmTest, Restore) {
  // The CIE also says rbx is same_value.
  cie_bytes_.insert(cie_bytes_.end(), {0x08, 0x03});
  Row row = Ok({0x90, 0x03, 0x83, 0x04, 0x86, 0x05,  // change r16, r3, r6
                0xd0, 0x06, 0x03, 0xc6});  // restore r16, restore_ext r3, r6
  ExpectRule(row, 16, Kind::kOffset, -8);
  ExpectRule(row, 3, Kind::kSameValue);
  ExpectRule(row, 6, Kind::kUnspecified);  // not mentioned by the CIE
}

TEST_F(CfaVmTest, RestoreInsideCieUsesDefaults) {
  cie_bytes_ = {0x0c, 0x07, 0x08, 0x90, 0x01, 0xd0};  // CIE restores r16
  ExpectRule(Ok({}), 16, Kind::kUnspecified);
}

TEST_F(CfaVmTest, DefCfa) {
  ExpectCfa(Ok({0x0c, 0x06, 0x90, 0x01}), 6, 144);  // def_cfa
  ExpectCfa(Ok({0x12, 0x06, 0x7e}), 6, 16);         // def_cfa_sf -2*-8
  ExpectCfa(Ok({0x0d, 0x06}), 6, 8);                // _register
  ExpectCfa(Ok({0x0e, 0x20}), 7, 32);               // _offset
  ExpectCfa(Ok({0x13, 0x7c}), 7, 32);               // _offset_sf
}

TEST_F(CfaVmTest, DefCfaExpressionPointsIntoInstructions) {
  Row row = Ok({0x0f, 0x02, 0x77, 0x08});
  EXPECT_EQ(row.cfa.kind, CfaRule::Kind::kExpression);
  EXPECT_EQ(row.cfa.expr.data(), fde_bytes_.data() + 2);
  EXPECT_EQ(row.cfa.expr.size(), 2u);
  // An expression CFA cannot take a new register or offset.
  EXPECT_EQ(Code({0x0f, 0x02, 0x77, 0x08, 0x0d, 0x06}), kDataLoss);
  EXPECT_EQ(Code({0x0f, 0x02, 0x77, 0x08, 0x0e, 0x10}), kDataLoss);
  EXPECT_EQ(Code({0x0f, 0x02, 0x77, 0x08, 0x13, 0x7e}), kDataLoss);
  // ...but a whole new def_cfa replaces it.
  ExpectCfa(Ok({0x0f, 0x02, 0x77, 0x08, 0x0c, 0x07, 0x10}), 7, 16);
}

TEST_F(CfaVmTest, DefCfaOffsetNeedsARegister) {
  cie_bytes_ = {};
  EXPECT_EQ(Code({0x0e, 0x10}), kDataLoss);
  ExpectCfa(Ok({0x0d, 0x06}), 6, 0);  // a register alone gives offset 0
}

TEST_F(CfaVmTest, ExpressionRules) {
  Row row = Ok({0x10, 0x06, 0x02, 0x77, 0x08, 0x16, 0x03, 0x01, 0x31});
  EXPECT_EQ(row.regs[6].kind, Kind::kExpression);
  EXPECT_EQ(row.regs[6].expr.data(), fde_bytes_.data() + 3);
  EXPECT_EQ(row.regs[6].expr.size(), 2u);
  EXPECT_EQ(row.regs[3].kind, Kind::kValExpression);
  EXPECT_EQ(row.regs[3].expr.data(), fde_bytes_.data() + 8);
  EXPECT_EQ(row.regs[3].expr.size(), 1u);
}

TEST_F(CfaVmTest, GnuArgsSize) { EXPECT_EQ(Ok({0x2e, 0x10}).args_size, 16); }

TEST_F(CfaVmTest, Nop) {
  Row row = Ok({0x00, 0x00, 0x00});
  ExpectCfa(row, 7, 8);
  EXPECT_EQ(row.pc_hi, 0x1100u);
}

TEST_F(CfaVmTest, UnknownOpcodesAreUnimplemented) {
  for (int op = 0x17; op < 0x40; ++op) {
    if (op == 0x2d || op == 0x2e || op == 0x2f) continue;
    EXPECT_EQ(Code({static_cast<uint8_t>(op)}), kUnimplemented) << op;
  }
  // GNU_window_save is SPARC's meaning of 0x2d.
  EXPECT_EQ(Code({0x2d}, Arch::kX86_64), kUnimplemented);
  EXPECT_EQ(Code({0x2d}, Arch::kX86), kUnimplemented);
}

TEST_F(CfaVmTest, VectorRegisterRulesAreIgnored) {
  Row base = Ok({});
  Row row = Ok({0x05, 0x31, 0x02,        // offset_extended xmm (49)
                0x10, 0x40, 0x01, 0x30,  // expression r64
                0x07, 0x50, 0x08, 0x50,  // undefined/same_value r80
                0x06, 0x50});            // restore_extended r80
  for (int r = 0; r < arch::kMaxRegisters; ++r) {
    EXPECT_EQ(row.regs[r], base.regs[r]) << r;
  }
  // The CFA is different: an untracked CFA register makes the row unusable.
  EXPECT_EQ(Code({0x0c, 0x31, 0x08}), kDataLoss);
  EXPECT_EQ(Code({0x0d, 0x28}), kDataLoss);
  EXPECT_EQ(Code({0x12, 0x80, 0x01, 0x08}), kDataLoss);
}

// ---- locations: advance_loc*, set_loc ----

TEST_F(CfaVmTest, AdvanceBoundaries) {
  // 0x1000: cfa+16; 0x1004: cfa+24; 0x1008: cfa+32.
  const Bytes p = {0x0e, 0x10, 0x44, 0x0e, 0x18, 0x44, 0x0e, 0x20};
  struct Case {
    uint64_t pc;
    int64_t offset;
    uint64_t lo, hi;
  };
  for (const Case& c :
       {Case{0x1000, 16, 0x1000, 0x1004}, Case{0x1003, 16, 0x1000, 0x1004},
        Case{0x1004, 24, 0x1004, 0x1008},  // exactly at one
        Case{0x1007, 24, 0x1004, 0x1008}, Case{0x1008, 32, 0x1008, 0x1100},
        Case{0x10ff, 32, 0x1008, 0x1100}}) {
    Row row = Ok(p, c.pc);
    ExpectCfa(row, 7, c.offset);
    EXPECT_EQ(row.pc_lo, c.lo) << std::hex << c.pc;
    EXPECT_EQ(row.pc_hi, c.hi) << std::hex << c.pc;
  }
}

TEST_F(CfaVmTest, AdvanceWidthsAndCodeAlignment) {
  const Bytes p = {0x02, 0x10, 0x0e, 0x10,        // advance_loc1 0x10
                   0x03, 0x10, 0x00, 0x0e, 0x18,  // advance_loc2 0x10
                   0x04, 0x10, 0,    0,    0,
                   0x0e, 0x20};  // advance_loc4 0x10
  ExpectCfa(Ok(p, 0x100f), 7, 8);
  ExpectCfa(Ok(p, 0x1010), 7, 16);
  ExpectCfa(Ok(p, 0x1020), 7, 24);
  Row row = Ok(p, 0x1030);
  ExpectCfa(row, 7, 32);
  EXPECT_EQ(row.pc_lo, 0x1030u);
  // aarch64: code alignment 4, so advance_loc 1 is 4 bytes.
  cie_.code_alignment = 4;
  row = Ok({0x41, 0x0e, 0x10}, 0x1003, Arch::kAArch64);
  ExpectCfa(row, 7, 8);
  EXPECT_EQ(row.pc_hi, 0x1004u);
  ExpectCfa(Ok({0x41, 0x0e, 0x10}, 0x1004, Arch::kAArch64), 7, 16);
}

TEST_F(CfaVmTest, AdvancePastFdeEndClampsRow) {
  Row row = Ok({0x04, 0, 0, 1, 0, 0x0e, 0x10}, 0x1050);  // +0x10000
  EXPECT_EQ(row.pc_hi, 0x1100u);
  ExpectCfa(row, 7, 8);
}

TEST_F(CfaVmTest, AdvanceOverflow) {
  cie_.code_alignment = uint64_t{1} << 62;
  EXPECT_EQ(Code({0x44}), kDataLoss);
  cie_.code_alignment = 1;
  fde_.pc_begin = ~uint64_t{0} - 0x10;
  fde_.pc_end = ~uint64_t{0};
  absl::StatusOr<Row> row = Run({0x04, 0xff, 0xff, 0xff, 0xff}, fde_.pc_begin);
  EXPECT_EQ(row.status().code(), kDataLoss);
}

TEST_F(CfaVmTest, SetLoc) {
  // .debug_frame: absptr of the CIE's address size.
  cie_.fde_encoding = kPeAbsptr;
  const Bytes p = {0x01, 0x20, 0x10, 0, 0, 0, 0, 0, 0, 0x0e, 0x10};
  ExpectCfa(Ok(p, 0x101f), 7, 8);
  EXPECT_EQ(Ok(p, 0x101f).pc_hi, 0x1020u);
  ExpectCfa(Ok(p, 0x1020), 7, 16);
  cie_.address_size = 4;
  ExpectCfa(Ok({0x01, 0x20, 0x10, 0, 0, 0x0e, 0x10}, 0x1020), 7, 16);
  // .eh_frame with udata4 and funcrel (relative to the FDE's pc_begin).
  cie_.fde_encoding = kPeUdata4;
  ExpectCfa(Ok({0x01, 0x20, 0x10, 0, 0, 0x0e, 0x10}, 0x1020), 7, 16);
  cie_.fde_encoding = kPeFuncrel | kPeUdata2;
  ExpectCfa(Ok({0x01, 0x20, 0x00, 0x0e, 0x10}, 0x1020), 7, 16);
  ExpectCfa(Ok({0x01, 0x20, 0x00, 0x0e, 0x10}, 0x101f), 7, 8);
  // Backwards is malformed.
  cie_.fde_encoding = kPeUdata4;
  EXPECT_EQ(Run({0x44, 0x01, 0x00, 0x10, 0, 0}, 0x1010).status().code(),
            kDataLoss);
  // pc-relative needs the section address, which the VM does not have.
  cie_.fde_encoding = kPePcrel | kPeSdata4;
  EXPECT_EQ(Code({0x01, 0, 0, 0, 0}), kUnimplemented);
  cie_.fde_encoding = kPeOmit;
  EXPECT_EQ(Code({0x01, 0, 0, 0, 0}), kDataLoss);
}

// ---- remember_state / restore_state ----

TEST_F(CfaVmTest, RememberRestoreNesting) {
  // remember; cfa+16, r6@-16; remember; cfa=rbp+16, r3@-24;
  // restore (-> cfa+16, r6 only); restore (-> CIE rules).
  const Bytes p = {0x0a, 0x0e, 0x10, 0x86, 0x02, 0x0a, 0x0c, 0x06,
                   0x10, 0x83, 0x03, 0x41, 0x0b, 0x41, 0x0b};
  Row inner = Ok(p, 0x1000);
  ExpectCfa(inner, 6, 16);
  ExpectRule(inner, 3, Kind::kOffset, -24);
  Row mid = Ok(p, 0x1001);
  ExpectCfa(mid, 7, 16);
  ExpectRule(mid, 6, Kind::kOffset, -16);
  ExpectRule(mid, 3, Kind::kUnspecified);
  Row outer = Ok(p, 0x1002);
  ExpectCfa(outer, 7, 8);
  ExpectRule(outer, 6, Kind::kUnspecified);
  ExpectRule(outer, 16, Kind::kOffset, -8);
}

TEST_F(CfaVmTest, RememberStateDepthLimit) {
  Bytes p(kMaxRememberStateDepth, 0x0a);
  p.insert(p.end(), kMaxRememberStateDepth, 0x0b);
  ExpectCfa(Ok(p), 7, 8);  // 64 deep is fine
  Bytes too_deep(kMaxRememberStateDepth + 1, 0x0a);
  absl::StatusOr<Row> row = Run(too_deep);
  EXPECT_EQ(row.status().code(), kDataLoss);
  EXPECT_THAT(row.status().message(), HasSubstr("offset 64"));
}

TEST_F(CfaVmTest, RestoreStateOnEmptyStack) {
  EXPECT_EQ(Code({0x0b}), kDataLoss);
  EXPECT_EQ(Code({0x0a, 0x0b, 0x0b}), kDataLoss);
}

TEST_F(CfaVmTest, NegateRaStateAcrossRememberRestore) {
  // An aarch64 PAC function: paciasp; ... remember; autiasp (toggle); ret;
  // restore (signed again for the code after the epilogue).
  cie_bytes_ = {0x0c, 0x1f, 0x00};  // def_cfa sp+0
  cie_.code_alignment = 4;
  cie_.data_alignment = -8;
  cie_.return_address_register = 30;
  const Bytes p = {0x2d, 0x41, 0x0a, 0x2d, 0x41, 0x0b, 0x41, 0x2d};
  EXPECT_TRUE(Ok(p, 0x1000, Arch::kAArch64).ra_signed);
  EXPECT_FALSE(Ok(p, 0x1004, Arch::kAArch64).ra_signed);
  EXPECT_TRUE(Ok(p, 0x1008, Arch::kAArch64).ra_signed);
  EXPECT_FALSE(Ok(p, 0x100c, Arch::kAArch64).ra_signed);
  EXPECT_EQ(Ok(p, 0x100c, Arch::kAArch64).return_address_register, 30);
}

// ---- malformed programs ----

TEST_F(CfaVmTest, TruncatedOperands) {
  cie_.fde_encoding = kPeUdata4;
  for (const Bytes& p :
       std::vector<Bytes>{{0x80},          {0x01, 0, 0},
                          {0x02},          {0x03, 0},
                          {0x04, 0, 0, 0}, {0x05, 0x03},
                          {0x05},          {0x06},
                          {0x07},          {0x08, 0x80},
                          {0x09, 0x03},    {0x0c, 0x07},
                          {0x0d},          {0x0e},
                          {0x0f},          {0x0f, 0x03, 0x77, 0x08},
                          {0x10, 0x03},    {0x10, 0x03, 0x02, 0x77},
                          {0x11, 0x03},    {0x12, 0x07},
                          {0x13},          {0x14, 0x03},
                          {0x15, 0x03},    {0x16, 0x03, 0x05},
                          {0x2e},          {0x2f, 0x03}}) {
    absl::StatusOr<Row> row = Run(p);
    EXPECT_EQ(row.status().code(), kDataLoss) << ::testing::PrintToString(p);
    EXPECT_THAT(row.status().message(), HasSubstr("FDE"));
  }
}

TEST_F(CfaVmTest, FactoredOffsetOverflow) {
  cie_.data_alignment = int64_t{1} << 40;
  // uleb 2^30 * 2^40 overflows int64.
  EXPECT_EQ(Code({0x86, 0x80, 0x80, 0x80, 0x80, 0x04}), kDataLoss);
  EXPECT_EQ(Code({0x13, 0x80, 0x80, 0x80, 0x80, 0x04}), kDataLoss);
  // A ULEB above INT64_MAX cannot be a signed offset.
  cie_.data_alignment = 1;
  EXPECT_EQ(
      Code({0x0e, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}),
      kDataLoss);
}

TEST_F(CfaVmTest, ErrorsNameTheOffset) {
  absl::StatusOr<Row> row = Run({0x00, 0x00, 0x0b});
  EXPECT_THAT(row.status().message(), HasSubstr("0x0b at offset 2"));
  cie_bytes_ = {0x0b};
  row = Run({});
  EXPECT_THAT(row.status().message(), HasSubstr("CIE"));
}

// ---- real-world programs ----

// gcc -O0 x86_64: push %rbp; mov %rsp,%rbp; ...; leave (at 0x100f); ret.
TEST_F(CfaVmTest, X86_64GccPrologue) {
  const Bytes p = {0x41,               // advance 1 (after push %rbp)
                   0x0e, 0x10,         // def_cfa_offset 16
                   0x86, 0x02,         // offset rbp, cfa-16
                   0x43,               // advance 3 (after mov %rsp,%rbp)
                   0x0d, 0x06,         // def_cfa_register rbp
                   0x4b,               // advance 11 (after leave at 0x100f)
                   0x0c, 0x07, 0x08};  // def_cfa rsp, 8
  Row r0 = Ok(p, 0x1000);
  ExpectCfa(r0, 7, 8);
  ExpectRule(r0, 6, Kind::kUnspecified);
  ExpectRule(r0, 16, Kind::kOffset, -8);
  EXPECT_EQ(r0.pc_hi, 0x1001u);
  for (uint64_t pc : {0x1001, 0x1003}) {
    Row r = Ok(p, pc);
    ExpectCfa(r, 7, 16);
    ExpectRule(r, 6, Kind::kOffset, -16);
    EXPECT_EQ(r.pc_lo, 0x1001u);
    EXPECT_EQ(r.pc_hi, 0x1004u);
  }
  for (uint64_t pc : {0x1004, 0x100e}) {
    Row r = Ok(p, pc);
    ExpectCfa(r, 6, 16);
    ExpectRule(r, 6, Kind::kOffset, -16);
    ExpectRule(r, 16, Kind::kOffset, -8);
    EXPECT_EQ(r.pc_lo, 0x1004u);
    EXPECT_EQ(r.pc_hi, 0x100fu);
  }
  Row ret = Ok(p, 0x100f);
  ExpectCfa(ret, 7, 8);
  EXPECT_EQ(ret.pc_lo, 0x100fu);
  EXPECT_EQ(ret.pc_hi, 0x1100u);
}

// binutils' .eh_frame for a lazy-binding x86_64 .plt (elf_x86_64_eh_frame_plt):
// PLT0 pushes once more; from the first PLT entry on the CFA depends on
// where in the 16-byte entry rip is.
TEST_F(CfaVmTest, X86_64PltProgram) {
  fde_.pc_begin = 0x1020;
  fde_.pc_end = 0x1060;
  const Bytes p = {0x0e, 0x10,  // def_cfa_offset 16
                   0x46,        // advance 6
                   0x0e, 0x18,  // def_cfa_offset 24
                   0x4a,        // advance 10
                   0x0f, 0x0b,  // def_cfa_expression, 11 bytes:
                   0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a,
                   0x3b, 0x2a, 0x33, 0x24, 0x22};
  Row r = Ok(p, 0x1020);
  ExpectCfa(r, 7, 16);
  EXPECT_EQ(r.pc_hi, 0x1026u);
  r = Ok(p, 0x102f);
  ExpectCfa(r, 7, 24);
  EXPECT_EQ(r.pc_lo, 0x1026u);
  EXPECT_EQ(r.pc_hi, 0x1030u);
  for (uint64_t pc : {0x1030, 0x103b, 0x105f}) {
    r = Ok(p, pc);
    EXPECT_EQ(r.cfa.kind, CfaRule::Kind::kExpression);
    EXPECT_EQ(r.cfa.expr.data(), fde_bytes_.data() + 8);
    EXPECT_EQ(r.cfa.expr.size(), 11u);
    EXPECT_EQ(r.pc_lo, 0x1030u);
    EXPECT_EQ(r.pc_hi, 0x1060u);
    ExpectRule(r, 16, Kind::kOffset, -8);
  }
}

}  // namespace
}  // namespace unwindd::unwinder
