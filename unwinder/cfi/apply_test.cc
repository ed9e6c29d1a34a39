// Synthetic-stack tests of ApplyRow (DWARF 5 §6.4.1 register rules): a
// hand-built Row, callee registers and a fake target memory in, the caller's
// registers out.
#include "unwinder/cfi/apply.h"

#include <cstdint>
#include <map>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "arch/arch.h"
#include "arch/register_set.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "memory/testing/map_memory.h"
#include "memory/memory.h"
#include "unwinder/cfi/row.h"

namespace unwindd::unwinder {
namespace {

using ::testing::HasSubstr;
using Kind = RegisterRule::Kind;
using arch::Arch;

// x86_64 DWARF numbers.
constexpr int kRbx = 3;
constexpr int kRbp = 6;
constexpr int kRsp = 7;
constexpr int kRip = 16;

using memory::testing::MapMemory;

Row CfaRow(int reg, int64_t offset, int ra = kRip) {
  Row row;
  row.cfa = CfaRule{
      CfaRule::Kind::kRegOffset, static_cast<uint16_t>(reg), offset, {}};
  row.return_address_register = static_cast<uint16_t>(ra);
  return row;
}

class ApplyTest : public ::testing::Test {
 protected:
  ApplyTest() {
    regs_.Set(kRsp, 0x7000);
    regs_.Set(kRbp, 0x7100);
    regs_.Set(kRbx, 0xb0b0);
    regs_.Set(kRip, 0x401234);
    // Right after a call: the return address at rsp = CFA-8.
    mem_.PutLe(0x7000, 0x400800, 8);
  }
  absl::StatusOr<ApplyResult> Apply(const Row& row) {
    return ApplyRow(row, regs_, mem_, load_bias_);
  }
  ApplyResult Ok(const Row& row) {
    absl::StatusOr<ApplyResult> r = Apply(row);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : ApplyResult{};
  }

  arch::RegisterSet regs_{Arch::kX86_64};
  MapMemory mem_;
  uint64_t load_bias_ = 0;
};

// The frame of a function right after `call`: CFA = rsp+8, RA at CFA-8.
TEST_F(ApplyTest, CallSiteFrame) {
  Row row = CfaRow(kRsp, 8);
  row.regs[kRip] = {Kind::kOffset, -8, {}};
  ApplyResult r = Ok(row);
  EXPECT_EQ(r.cfa, 0x7008u);
  EXPECT_FALSE(r.ra_undefined);
  EXPECT_EQ(r.caller.pc(), 0x400800u);
  EXPECT_EQ(r.caller.sp(), 0x7008u);  // SP defaults to the CFA
  // kUnspecified keeps the callee's values.
  EXPECT_EQ(r.caller.Get(kRbp), 0x7100u);
  EXPECT_EQ(r.caller.Get(kRbx), 0xb0b0u);
  EXPECT_FALSE(r.caller.Valid(0));  // invalid in the callee, invalid here
}

TEST_F(ApplyTest, OffsetRule) {
  Row row = CfaRow(kRbp, 16);  // after push %rbp; mov %rsp,%rbp
  row.regs[kRip] = {Kind::kOffset, -8, {}};
  row.regs[kRbp] = {Kind::kOffset, -16, {}};
  mem_.PutLe(0x7100, 0x7200, 8);    // saved rbp
  mem_.PutLe(0x7108, 0x400900, 8);  // return address
  ApplyResult r = Ok(row);
  EXPECT_EQ(r.cfa, 0x7110u);
  EXPECT_EQ(r.caller.Get(kRbp), 0x7200u);
  EXPECT_EQ(r.caller.pc(), 0x400900u);
  EXPECT_EQ(r.caller.sp(), 0x7110u);
}

TEST_F(ApplyTest, ValOffsetSameValueRegister) {
  Row row = CfaRow(kRsp, 8);
  row.regs[kRip] = {Kind::kOffset, -8, {}};
  row.regs[kRbx] = {Kind::kValOffset, -0x20, {}};
  row.regs[kRbp] = {Kind::kSameValue, 0, {}};
  row.regs[12] = {Kind::kRegister, kRbx, {}};
  row.regs[13] = {Kind::kRegister, 0, {}};  // from an invalid register
  ApplyResult r = Ok(row);
  EXPECT_EQ(r.caller.Get(kRbx), 0x7008u - 0x20);
  EXPECT_EQ(r.caller.Get(kRbp), 0x7100u);
  EXPECT_EQ(r.caller.Get(12), 0xb0b0u);  // the callee's rbx, not the caller's
  EXPECT_FALSE(r.caller.Valid(13));
}

TEST_F(ApplyTest, RulesSeeCalleeRegistersOnly) {
  // rbp is restored from memory and rbx := rbp; rbx must get the *callee's*
  // rbp, whatever the evaluation order.
  Row row = CfaRow(kRsp, 8);
  row.regs[kRip] = {Kind::kOffset, -8, {}};
  row.regs[kRbp] = {Kind::kValOffset, 0, {}};
  row.regs[kRbx] = {Kind::kRegister, kRbp, {}};
  ApplyResult r = Ok(row);
  EXPECT_EQ(r.caller.Get(kRbp), 0x7008u);
  EXPECT_EQ(r.caller.Get(kRbx), 0x7100u);
}

TEST_F(ApplyTest, ExpressionRules) {
  // DW_CFA_expression rbx: DW_OP_lit16 DW_OP_minus (address CFA-16).
  // DW_CFA_val_expression rbp: DW_OP_breg6 0x10 DW_OP_plus (CFA + rbp + 16).
  const std::vector<uint8_t> at = {0x40, 0x1c};
  const std::vector<uint8_t> val = {0x76, 0x10, 0x22};
  Row row = CfaRow(kRsp, 8);
  row.regs[kRip] = {Kind::kOffset, -8, {}};
  row.regs[kRbx] = {Kind::kExpression, 0, at};
  row.regs[kRbp] = {Kind::kValExpression, 0, val};
  mem_.PutLe(0x6ff8, 0xcafe, 8);
  ApplyResult r = Ok(row);
  EXPECT_EQ(r.caller.Get(kRbx), 0xcafeu);
  EXPECT_EQ(r.caller.Get(kRbp), 0x7008u + 0x7100 + 0x10);
}

TEST_F(ApplyTest, CfaExpressionX86_64Plt) {
  // binutils' .plt CFA: rsp + 8 + ((rip & 15) >= 11 ? 8 : 0).
  const std::vector<uint8_t> plt = {0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a,
                                    0x3b, 0x2a, 0x33, 0x24, 0x22};
  Row row;
  row.cfa = CfaRule{CfaRule::Kind::kExpression, 0, 0, plt};
  row.return_address_register = kRip;
  row.regs[kRip] = {Kind::kOffset, -8, {}};
  mem_.PutLe(0x7008, 0x400700, 8);  // RA when the index is on the stack too
  // rip at the start of a PLT entry (jmp *GOT): only the RA is on the stack.
  regs_.Set(kRip, 0x1030);
  ApplyResult r = Ok(row);
  EXPECT_EQ(r.cfa, 0x7008u);
  EXPECT_EQ(r.caller.pc(), 0x400800u);
  // rip after `push $index` (offset 11): the index sits below the RA.
  regs_.Set(kRip, 0x103b);
  r = Ok(row);
  EXPECT_EQ(r.cfa, 0x7010u);
  EXPECT_EQ(r.caller.pc(), 0x400700u);
  EXPECT_EQ(r.caller.sp(), 0x7010u);
}

TEST_F(ApplyTest, ReturnAddressUndefined) {
  Row row = CfaRow(kRsp, 8);
  row.regs[kRip] = {Kind::kUndefined, 0, {}};
  row.regs[kRbp] = {Kind::kUndefined, 0, {}};
  ApplyResult r = Ok(row);
  EXPECT_TRUE(r.ra_undefined);
  EXPECT_FALSE(r.caller.Valid(kRip));
  EXPECT_FALSE(r.caller.Valid(kRbp));
}

TEST_F(ApplyTest, ExplicitSpRuleWins) {
  Row row = CfaRow(kRbp, 16);
  row.regs[kRip] = {Kind::kValOffset, 0, {}};
  row.regs[kRsp] = {Kind::kSameValue, 0, {}};
  EXPECT_EQ(Ok(row).caller.sp(), 0x7000u);
  row.regs[kRsp] = {Kind::kValOffset, 0x40, {}};
  EXPECT_EQ(Ok(row).caller.sp(), 0x7110u + 0x40);
}

TEST_F(ApplyTest, CfaErrors) {
  Row row;  // no CFA rule
  row.return_address_register = kRip;
  EXPECT_EQ(Apply(row).status().code(), absl::StatusCode::kFailedPrecondition);
  row = CfaRow(10, 8);  // r10 has no known value in the callee
  absl::StatusOr<ApplyResult> r = Apply(row);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_THAT(r.status().message(), HasSubstr("r10"));
  // The CFA may not wrap around the address space.
  regs_.Set(kRbx, ~uint64_t{0} - 4);
  EXPECT_EQ(Apply(CfaRow(kRbx, 8)).status().code(),
            absl::StatusCode::kDataLoss);
  regs_.Set(kRbx, 4);
  EXPECT_EQ(Apply(CfaRow(kRbx, -8)).status().code(),
            absl::StatusCode::kDataLoss);
  // Errors from the CFA expression pass through with their code.
  const std::vector<uint8_t> bad = {0x1b};
  row.cfa = CfaRule{CfaRule::Kind::kExpression, 0, 0, bad};
  EXPECT_EQ(Apply(row).status().code(), absl::StatusCode::kDataLoss);
}

TEST_F(ApplyTest, UnreadableMemoryIsOutOfRange) {
  Row row = CfaRow(kRsp, 0x100);
  row.regs[kRip] = {Kind::kOffset, -8, {}};
  absl::StatusOr<ApplyResult> r = Apply(row);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_THAT(r.status().message(), HasSubstr("0x70f8"));
  // Also through DW_CFA_expression.
  const std::vector<uint8_t> far = {0x0a, 0x00, 0x10, 0x22};  // CFA+0x1000
  row = CfaRow(kRsp, 8);
  row.regs[kRip] = {Kind::kExpression, 0, far};
  r = Apply(row);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_THAT(r.status().message(), HasSubstr("0x8008"));
}

// Recovery is lazy (rules.h): a callee-saved register whose slot cannot be
// read is unknown in the caller, not an error, whichever rule names the
// slot; only the return address and the CFA must be known.
TEST_F(ApplyTest, AnUnreadableSaveSlotLeavesTheRegisterUnknown) {
  const std::vector<uint8_t> far = {0x0a, 0x00, 0x10, 0x22};  // CFA+0x1000
  regs_.Set(kRbx, 0x1234);
  regs_.Set(kRbp, 0x5678);
  Row row = CfaRow(kRsp, 8);
  row.regs[kRip] = {Kind::kOffset, -8, {}};
  row.regs[kRbx] = {Kind::kOffset, -0x100, {}};     // below what is mapped
  row.regs[kRbp] = {Kind::kExpression, 0, far};     // above it
  ApplyResult r = Ok(row);
  EXPECT_FALSE(r.caller.Valid(kRbx));
  EXPECT_FALSE(r.caller.Valid(kRbp));
  EXPECT_TRUE(r.caller.Valid(kRip));
  // ... and a CFA that needs one of them is an unreadable value.
  absl::StatusOr<ApplyResult> next =
      ApplyRow(CfaRow(kRbx, 16), r.caller, mem_, 0);
  EXPECT_EQ(next.status().code(), absl::StatusCode::kOutOfRange);
}

// The epilogue rule (rules.h, ReadCalleeSaved): frame 0 of a -O0 function
// at its `ret`, after `leave` popped rbp. The row still says rbp is saved at
// CFA-16, a slot now below rsp, and the caller's CFA is rbp-based. With
// frame 0's sp as `restored_below` the register keeps its (restored)
// value, whatever the slot holds or whether it can be read; for a caller
// frame (restored_below 0) the slot is read as always.
TEST_F(ApplyTest, ASlotBelowFrameZerosSpWasPoppedAlready) {
  regs_.Set(kRsp, 0x7000);   // at `ret`: the return address at rsp
  regs_.Set(kRbp, 0x7400);   // the caller's rbp, restored by `leave`
  Row row = CfaRow(kRsp, 8);
  row.regs[kRip] = {Kind::kOffset, -8, {}};
  row.regs[kRbp] = {Kind::kOffset, -16, {}};  // 0x6ff8: below rsp
  row.regs[kRbx] = {Kind::kOffset, -24, {}};  // 0x6ff0: below rsp
  absl::StatusOr<ApplyResult> r = ApplyRow(row, regs_, mem_, 0, /*restored_below=*/0x7000);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->caller.Get(kRbp), 0x7400u);
  EXPECT_EQ(r->caller.Get(kRbx), 0xb0b0u);
  EXPECT_EQ(r->caller.pc(), 0x400800u);
  // Not frame 0: the slots are read, and they are unreadable here.
  absl::StatusOr<ApplyResult> caller = ApplyRow(row, regs_, mem_, 0, 0);
  ASSERT_TRUE(caller.ok()) << caller.status();
  EXPECT_FALSE(caller->caller.Valid(kRbp));
  EXPECT_FALSE(caller->caller.Valid(kRbx));
  // Readable slots of frame 0 below sp still give way to the register.
  mem_.PutLe(0x6ff8, 0xdead, 8);
  r = ApplyRow(row, regs_, mem_, 0, 0x7000);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->caller.Get(kRbp), 0x7400u);
  // A slot at or above sp is read.
  row.regs[kRbp] = {Kind::kOffset, -8 - 8, {}};
  regs_.Set(kRsp, 0x6ff8);
  mem_.PutLe(0x6ff8, 0x7500, 8);
  mem_.PutLe(0x7000, 0x400800, 8);
  row.cfa.offset = 16;  // CFA = 0x7008, rbp at 0x6ff8 == rsp
  r = ApplyRow(row, regs_, mem_, 0, 0x6ff8);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->caller.Get(kRbp), 0x7500u);
}

TEST_F(ApplyTest, ReturnAddressWithoutValue) {
  Row row = CfaRow(kRsp, 8);
  row.regs[kRip] = {Kind::kRegister, 0, {}};  // rax: unknown in the callee
  EXPECT_EQ(Apply(row).status().code(), absl::StatusCode::kOutOfRange);
  row.return_address_register = arch::kMaxRegisters;
  EXPECT_EQ(Apply(row).status().code(), absl::StatusCode::kDataLoss);
}

TEST_F(ApplyTest, AArch64LeafAndSignedRa) {
  // aarch64: no DWARF PC column in CFI; the RA is x30 and the caller's PC
  // slot (32) is filled from it.
  arch::RegisterSet regs(Arch::kAArch64);
  regs.Set(31, 0x8000);         // sp
  regs.Set(30, 0x4000abcd);     // lr
  regs.Set(29, 0x8100);         // fp
  regs.Set(32, 0x400000);       // pc
  Row row = CfaRow(31, 0, 30);  // a leaf: CFA = sp, x30 unspecified
  absl::StatusOr<ApplyResult> r = ApplyRow(row, regs, mem_, 0);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->caller.pc(), 0x4000abcdu);
  EXPECT_EQ(r->caller.Get(30), 0x4000abcdu);
  EXPECT_EQ(r->caller.sp(), 0x8000u);
  // A PAC-signed RA saved at CFA-8 is returned exactly as read.
  mem_.PutLe(0x8008, 0x002f00000040abcd, 8);
  row = CfaRow(31, 16, 30);
  row.regs[30] = {Kind::kOffset, -8, {}};
  row.regs[29] = {Kind::kOffset, -16, {}};
  row.ra_signed = true;
  mem_.PutLe(0x8000, 0x8200, 8);
  r = ApplyRow(row, regs, mem_, 0);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->caller.pc(), 0x002f00000040abcdu);
  EXPECT_EQ(r->caller.Get(29), 0x8200u);
  EXPECT_EQ(r->caller.sp(), 0x8010u);
}

TEST_F(ApplyTest, X86Is32Bit) {
  arch::RegisterSet regs(Arch::kX86);
  regs.Set(4, 0xfff0);     // esp
  regs.Set(5, 0xfff8);     // ebp
  regs.Set(8, 0x8048000);  // eip
  // Return address (4 bytes) at CFA-4; the upper bytes are another word.
  mem_.PutLe(0xfff0, 0xaaaaaaaa0804a123, 8);
  Row row = CfaRow(4, 4, 8);
  row.regs[8] = {Kind::kOffset, -4, {}};
  absl::StatusOr<ApplyResult> r = ApplyRow(row, regs, mem_, 0);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->cfa, 0xfff4u);
  EXPECT_EQ(r->caller.pc(), 0x0804a123u);
  EXPECT_EQ(r->caller.sp(), 0xfff4u);
  EXPECT_EQ(r->caller.Get(5), 0xfff8u);
  // A CFA beyond 4 GiB wraps the 32-bit address space.
  regs.Set(4, 0xfffffffc);
  EXPECT_EQ(ApplyRow(row, regs, mem_, 0).status().code(),
            absl::StatusCode::kDataLoss);
  // val_offset arithmetic and expression results stay 32-bit.
  regs.Set(4, 0xfff0);
  const std::vector<uint8_t> expr = {0x74, 0x7c};  // DW_OP_breg4 -4
  row.regs[5] = {Kind::kValExpression, 0, expr};
  r = ApplyRow(row, regs, mem_, 0);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->caller.Get(5), 0xffecu);
  regs.Set(4, 0);
  row.cfa = CfaRule{CfaRule::Kind::kExpression, 0, 0, expr};  // 0 - 4
  mem_.PutLe(0xfffffff8, 0x12345678, 4);
  r = ApplyRow(row, regs, mem_, 0);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->cfa, 0xfffffffcu);
  EXPECT_EQ(r->caller.pc(), 0x12345678u);
}

}  // namespace
}  // namespace unwindd::unwinder
