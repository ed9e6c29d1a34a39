// Byte-level tests of the DWARF expression evaluator (DWARF 5 §2.5.1): every
// DW_OP, the limits, and malformed input.
#include "unwinder/cfi/dwarf_expr.h"

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "arch/arch.h"
#include "arch/register_set.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "memory/testing/map_memory.h"
#include "memory/memory.h"

namespace unwindd::unwinder {
namespace {

using ::testing::HasSubstr;
using Bytes = std::vector<uint8_t>;

using memory::testing::MapMemory;

class DwarfExprTest : public ::testing::Test {
 protected:
  absl::StatusOr<uint64_t> Eval(const Bytes& expr,
                                std::optional<uint64_t> initial = {}) {
    ExpressionContext ctx{&regs_, &mem_, regs_.arch(), load_bias_};
    return EvaluateExpression(expr, ctx, initial);
  }
  uint64_t Value(const Bytes& expr, std::optional<uint64_t> initial = {}) {
    absl::StatusOr<uint64_t> v = Eval(expr, initial);
    EXPECT_TRUE(v.ok()) << v.status();
    return v.ok() ? *v : 0xdeadbeef;
  }
  absl::StatusCode Code(const Bytes& expr) {
    return Eval(expr).status().code();
  }
  void UseX86() { regs_ = arch::RegisterSet(arch::Arch::kX86); }

  arch::RegisterSet regs_{arch::Arch::kX86_64};
  MapMemory mem_;
  uint64_t load_bias_ = 0;
};

constexpr auto kDataLoss = absl::StatusCode::kDataLoss;
constexpr auto kUnimplemented = absl::StatusCode::kUnimplemented;

// ---- literals and constants (§2.5.1.1) ----

TEST_F(DwarfExprTest, Literals) {
  for (uint8_t i = 0; i < 32; ++i) {
    EXPECT_EQ(Value({static_cast<uint8_t>(0x30 + i)}), i);
  }
}

TEST_F(DwarfExprTest, Constants) {
  EXPECT_EQ(Value({0x08, 0xff}), 0xffu);                            // const1u
  EXPECT_EQ(Value({0x09, 0xff}), ~uint64_t{0});                     // const1s
  EXPECT_EQ(Value({0x0a, 0x34, 0x92}), 0x9234u);                    // const2u
  EXPECT_EQ(Value({0x0b, 0x00, 0x80}), uint64_t(int64_t{-32768}));  // const2s
  EXPECT_EQ(Value({0x0c, 1, 2, 3, 0x84}), 0x84030201u);             // const4u
  EXPECT_EQ(Value({0x0d, 0xfe, 0xff, 0xff, 0xff}), uint64_t(int64_t{-2}));
  EXPECT_EQ(Value({0x0e, 1, 2, 3, 4, 5, 6, 7, 8}), 0x0807060504030201u);
  EXPECT_EQ(Value({0x0f, 0xfd, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}),
            uint64_t(int64_t{-3}));
  EXPECT_EQ(Value({0x10, 0xe5, 0x8e, 0x26}), 624485u);  // constu
  EXPECT_EQ(Value({0x11, 0xc0, 0xbb, 0x78}), uint64_t(int64_t{-123456}));
}

TEST_F(DwarfExprTest, AddrAddsLoadBias) {
  load_bias_ = 0x1000;
  EXPECT_EQ(Value({0x03, 0x00, 0x20, 0, 0, 0, 0, 0, 0}), 0x3000u);
  UseX86();  // 4-byte operand on a 32-bit arch
  EXPECT_EQ(Value({0x03, 0x00, 0x20, 0, 0}), 0x3000u);
  EXPECT_EQ(Code({0x03, 0x00, 0x20, 0}), kDataLoss);
}

TEST_F(DwarfExprTest, TruncatedOperands) {
  for (const Bytes& e : std::vector<Bytes>{{0x03, 0, 0, 0},
                                           {0x08},
                                           {0x09},
                                           {0x0a, 0},
                                           {0x0b, 0},
                                           {0x0c, 0, 0, 0},
                                           {0x0d, 0},
                                           {0x0e, 0, 0, 0, 0, 0, 0, 0},
                                           {0x0f},
                                           {0x10, 0x80},
                                           {0x11, 0xff},
                                           {0x30, 0x15},
                                           {0x30, 0x23},
                                           {0x30, 0x28, 0},
                                           {0x2f, 0},
                                           {0x70},
                                           {0x90},
                                           {0x92, 1},
                                           {0x92},
                                           {0x30, 0x94},
                                           {0x30, 0x30, 0x95},
                                           {0xf1},
                                           {0xf1, 0x03, 0, 0}}) {
    EXPECT_EQ(Code(e), kDataLoss) << ::testing::PrintToString(e);
  }
}

// ---- stack operations (§2.5.1.3) ----

TEST_F(DwarfExprTest, StackOps) {
  EXPECT_EQ(Value({0x35, 0x12, 0x22}), 10u);          // 5 dup plus
  EXPECT_EQ(Value({0x31, 0x32, 0x13}), 1u);           // 1 2 drop
  EXPECT_EQ(Value({0x31, 0x32, 0x14}), 1u);           // 1 2 over
  EXPECT_EQ(Value({0x31, 0x32, 0x33, 0x15, 2}), 1u);  // pick 2
  EXPECT_EQ(Value({0x31, 0x32, 0x33, 0x15, 0}), 3u);  // pick 0 == dup
  EXPECT_EQ(Value({0x31, 0x32, 0x16}), 1u);           // swap
  EXPECT_EQ(Value({0x31, 0x32, 0x16, 0x13}), 2u);     // swap drop
  // rot: [1 2 3] -> [3 1 2]
  EXPECT_EQ(Value({0x31, 0x32, 0x33, 0x17}), 2u);
  EXPECT_EQ(Value({0x31, 0x32, 0x33, 0x17, 0x13}), 1u);
  EXPECT_EQ(Value({0x31, 0x32, 0x33, 0x17, 0x13, 0x13}), 3u);
  EXPECT_EQ(Value({0x96, 0x37, 0x96}), 7u);  // nop
}

TEST_F(DwarfExprTest, Underflow) {
  for (const Bytes& e : std::vector<Bytes>{{0x12},
                                           {0x13},
                                           {0x31, 0x14},
                                           {0x31, 0x15, 1},
                                           {0x31, 0x16},
                                           {0x31, 0x32, 0x17},
                                           {0x06},
                                           {0x31, 0x18},
                                           {0x19},
                                           {0x31, 0x1a},
                                           {0x31, 0x22},
                                           {0x23, 1},
                                           {0x1f},
                                           {0x28, 0, 0},
                                           {0x31, 0x29},
                                           {0x94, 4},
                                           {0x31, 0x95, 4}}) {
    absl::StatusOr<uint64_t> v = Eval(e);
    EXPECT_EQ(v.status().code(), kDataLoss) << ::testing::PrintToString(e);
    EXPECT_THAT(v.status().message(), HasSubstr("underflow"));
  }
}

TEST_F(DwarfExprTest, StackLimit) {
  Bytes e(kMaxExpressionStack, 0x31);
  EXPECT_EQ(Value(e), 1u);  // 64 entries fit
  e.push_back(0x31);        // the 65th does not
  absl::StatusOr<uint64_t> v = Eval(e);
  EXPECT_EQ(v.status().code(), kDataLoss);
  EXPECT_THAT(v.status().message(), HasSubstr("expression stack overflow"));
  EXPECT_THAT(v.status().message(), HasSubstr("offset 64"));
  // The initial value counts too.
  EXPECT_EQ(Eval(Bytes(kMaxExpressionStack, 0x31), 7).status().code(),
            kDataLoss);
}

TEST_F(DwarfExprTest, EmptyResult) {
  EXPECT_EQ(Code({}), kDataLoss);
  EXPECT_EQ(Code({0x31, 0x13}), kDataLoss);
  EXPECT_EQ(Value({}, 42), 42u);  // the initial value is the result
  EXPECT_EQ(Value({0x38, 0x22}, 42), 50u);
}

// ---- arithmetic and logic (§2.5.1.4) ----

TEST_F(DwarfExprTest, Arithmetic) {
  const uint64_t kMinus1 = ~uint64_t{0};
  EXPECT_EQ(Value({0x09, 0xfb, 0x19}), 5u);                           // abs -5
  EXPECT_EQ(Value({0x35, 0x19}), 5u);                                 // abs 5
  EXPECT_EQ(Value({0x3c, 0x3a, 0x1a}), 8u);                           // 12 & 10
  EXPECT_EQ(Value({0x09, 0xf9, 0x32, 0x1b}), uint64_t(int64_t{-3}));  // -7/2
  EXPECT_EQ(Value({0x3a, 0x33, 0x1c}), 7u);                           // 10 - 3
  EXPECT_EQ(Value({0x33, 0x3a, 0x1c}), uint64_t(int64_t{-7}));
  EXPECT_EQ(Value({0x3a, 0x33, 0x1d}), 1u);               // 10 % 3
  EXPECT_EQ(Value({0x36, 0x37, 0x1e}), 42u);              // mul
  EXPECT_EQ(Value({0x35, 0x1f}), uint64_t(int64_t{-5}));  // neg
  EXPECT_EQ(Value({0x30, 0x20}), kMinus1);                // not
  EXPECT_EQ(Value({0x3c, 0x33, 0x21}), 15u);              // or
  EXPECT_EQ(Value({0x3c, 0x33, 0x22}), 15u);              // plus
  EXPECT_EQ(Value({0x3c, 0x23, 0x80, 0x01}), 140u);       // plus_uconst 128
  EXPECT_EQ(Value({0x33, 0x34, 0x24}), 48u);              // 3 << 4
  EXPECT_EQ(Value({0x31, 0x08, 64, 0x24}), 0u);           // shift >= width
  EXPECT_EQ(Value({0x09, 0x80, 0x34, 0x25}),
            (kMinus1 - 127) >> 4);  // shr logical
  EXPECT_EQ(Value({0x09, 0x80, 0x34, 0x26}), uint64_t(int64_t{-8}));  // shra
  EXPECT_EQ(Value({0x09, 0x80, 0x08, 200, 0x26}), kMinus1);
  EXPECT_EQ(Value({0x3c, 0x3a, 0x27}), 6u);  // xor
  // Wraparound is defined (two's complement), not an error.
  EXPECT_EQ(Value({0x30, 0x20, 0x32, 0x22}), 1u);
}

TEST_F(DwarfExprTest, DivisionEdgeCases) {
  absl::StatusOr<uint64_t> v = Eval({0x31, 0x30, 0x1b});
  EXPECT_EQ(v.status().code(), kDataLoss);
  EXPECT_THAT(v.status().message(), HasSubstr("division by zero"));
  EXPECT_EQ(Code({0x31, 0x30, 0x1d}), kDataLoss);  // mod 0
  // INT64_MIN / -1 wraps instead of trapping.
  EXPECT_EQ(Value({0x0e, 0, 0, 0, 0, 0, 0, 0, 0x80, 0x09, 0xff, 0x1b}),
            uint64_t{1} << 63);
}

TEST_F(DwarfExprTest, Comparisons) {
  struct Case {
    uint8_t op;
    bool lt, eq, gt;  // expected for (a<b), (a==b), (a>b)
  };
  // eq ge gt le lt ne
  const Case cases[] = {{0x29, false, true, false}, {0x2a, false, true, true},
                        {0x2b, false, false, true}, {0x2c, true, true, false},
                        {0x2d, true, false, false}, {0x2e, true, false, true}};
  for (const Case& c : cases) {
    // Signed: -1 < 1.
    EXPECT_EQ(Value({0x09, 0xff, 0x31, c.op}), uint64_t{c.lt}) << int{c.op};
    EXPECT_EQ(Value({0x33, 0x33, c.op}), uint64_t{c.eq}) << int{c.op};
    EXPECT_EQ(Value({0x31, 0x09, 0xff, c.op}), uint64_t{c.gt}) << int{c.op};
  }
}

// ---- control flow (§2.5.1.5) ----

TEST_F(DwarfExprTest, SkipAndBranch) {
  // skip +1 over lit5 -> lit7
  EXPECT_EQ(Value({0x2f, 0x01, 0x00, 0x35, 0x37}), 7u);
  // lit1 bra +1 (taken) lit5 lit7
  EXPECT_EQ(Value({0x31, 0x28, 0x01, 0x00, 0x35, 0x37}), 7u);
  // lit0 bra +1 (not taken) lit5 lit7 plus
  EXPECT_EQ(Value({0x30, 0x28, 0x01, 0x00, 0x35, 0x37, 0x22}), 12u);
  // A branch to exactly the end ends the expression.
  EXPECT_EQ(Value({0x33, 0x2f, 0x01, 0x00, 0x35}), 3u);
  // Backwards loop: counter from 3 down to 0, then the result 9.
  // 0:lit3 1:lit1 2:minus 3:dup 4:bra -5 (to 1) 7:drop 8:lit9
  EXPECT_EQ(Value({0x33, 0x31, 0x1c, 0x12, 0x28, 0xfa, 0xff, 0x13, 0x39}), 9u);
}

TEST_F(DwarfExprTest, BadBranchTarget) {
  absl::StatusOr<uint64_t> v = Eval({0x2f, 0x02, 0x00, 0x35});
  EXPECT_EQ(v.status().code(), kDataLoss);
  EXPECT_THAT(v.status().message(), HasSubstr("branch target"));
  EXPECT_EQ(Code({0x2f, 0xf0, 0xff}), kDataLoss);        // before the start
  EXPECT_EQ(Code({0x31, 0x28, 0x10, 0x00}), kDataLoss);  // bra past the end
}

TEST_F(DwarfExprTest, InfiniteLoopHitsBudget) {
  absl::StatusOr<uint64_t> v = Eval({0x2f, 0xfd, 0xff});  // skip -3
  EXPECT_EQ(v.status().code(), kDataLoss);
  EXPECT_THAT(v.status().message(), HasSubstr("operations"));
  // lit1, then dup; bra back to the dup: loops with a bounded stack.
  EXPECT_EQ(Code({0x31, 0x12, 0x28, 0xfc, 0xff}), kDataLoss);
}

// ---- registers (§2.5.1.2) ----

TEST_F(DwarfExprTest, RegisterValues) {
  // aarch64 tracks all 32 registers that DW_OP_reg0-31 can name.
  regs_ = arch::RegisterSet(arch::Arch::kAArch64);
  for (int r = 0; r < 32; ++r) regs_.Set(r, 0x1000 + r);
  for (uint8_t r = 0; r < 32; ++r) {
    // DW_OP_regN pushes the register's value (see dwarf_expr.cc).
    EXPECT_EQ(Value({static_cast<uint8_t>(0x50 + r)}), 0x1000u + r);
    // DW_OP_bregN pushes value + SLEB offset.
    EXPECT_EQ(Value({static_cast<uint8_t>(0x70 + r), 0x7f}), 0x1000u + r - 1);
  }
  EXPECT_EQ(Value({0x90, 0x1f}), 0x101fu);             // regx 31
  EXPECT_EQ(Value({0x92, 0x1d, 0x10}), 0x101du + 16);  // bregx 29, 16
}

TEST_F(DwarfExprTest, InvalidRegister) {
  regs_.Set(7, 0x7000);
  absl::StatusOr<uint64_t> v = Eval({0x76, 0x00});  // breg6 (rbp) not set
  EXPECT_EQ(v.status().code(), absl::StatusCode::kOutOfRange);  // no known value
  EXPECT_THAT(v.status().message(), HasSubstr("rbp"));
  EXPECT_EQ(Eval({0x56}).status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(Eval({0x92, 0xc8, 0x01, 0x00}).status().code(),  // bregx 200
            absl::StatusCode::kUnimplemented);                // never tracked
  EXPECT_EQ(Value({0x77, 0x08}), 0x7008u);
}

// ---- memory ----

TEST_F(DwarfExprTest, Deref) {
  mem_.PutLe(0x5000, 0x1122334455667788, 8);
  regs_.Set(7, 0x5000);
  EXPECT_EQ(Value({0x77, 0x00, 0x06}), 0x1122334455667788u);
  EXPECT_EQ(Value({0x77, 0x00, 0x94, 1}), 0x88u);
  EXPECT_EQ(Value({0x77, 0x00, 0x94, 2}), 0x7788u);
  EXPECT_EQ(Value({0x77, 0x00, 0x94, 4}), 0x55667788u);
  EXPECT_EQ(Value({0x77, 0x00, 0x94, 8}), 0x1122334455667788u);
  EXPECT_EQ(Code({0x77, 0x00, 0x94, 0}), kDataLoss);
  EXPECT_EQ(Code({0x77, 0x00, 0x94, 9}), kDataLoss);
  // xderef{,_size}: the address-space id under the address is ignored.
  EXPECT_EQ(Value({0x33, 0x77, 0x00, 0x18}), 0x1122334455667788u);
  EXPECT_EQ(Value({0x33, 0x77, 0x00, 0x95, 2}), 0x7788u);
}

TEST_F(DwarfExprTest, UnreadableMemoryIsOutOfRange) {
  mem_.PutLe(0x5000, 0, 4);
  absl::StatusOr<uint64_t> v = Eval({0x0c, 0x00, 0x50, 0, 0, 0x06});
  EXPECT_EQ(v.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_THAT(v.status().message(), HasSubstr("0x5004"));  // first bad byte
  EXPECT_THAT(v.status().message(), HasSubstr("0x5000"));
}

// ---- DW_OP_GNU_encoded_addr ----

TEST_F(DwarfExprTest, GnuEncodedAddr) {
  load_bias_ = 0x10000;
  // udata4 0x2000 -> file address, biased.
  EXPECT_EQ(Value({0xf1, 0x03, 0x00, 0x20, 0x00, 0x00}), 0x12000u);
  // absptr on x86_64 is 8 bytes.
  EXPECT_EQ(Value({0xf1, 0x00, 0x00, 0x20, 0, 0, 0, 0, 0, 0}), 0x12000u);
  // indirect|udata4: read the pointer at the biased address.
  mem_.PutLe(0x12000, 0xabcdef, 8);
  EXPECT_EQ(Value({0xf1, 0x83, 0x00, 0x20, 0x00, 0x00}), 0xabcdefu);
  // pc-relative: the expression's own address is unknown here.
  EXPECT_EQ(Code({0xf1, 0x1b, 0, 0, 0, 0}), kUnimplemented);
  EXPECT_EQ(Code({0xf1, 0xff}), kDataLoss);  // omit
}

// ---- unsupported ops ----

TEST_F(DwarfExprTest, Unimplemented) {
  regs_.Set(7, 0x1000);
  for (uint8_t op : {0x91, 0x93, 0x97, 0x98, 0x99, 0x9a, 0x9b, 0x9c, 0x9d, 0x9e,
                     0x9f, 0xe0, 0x00, 0xff}) {
    absl::StatusOr<uint64_t> v = Eval({0x31, op, 0x00, 0x00, 0x00, 0x00});
    EXPECT_EQ(v.status().code(), kUnimplemented) << int{op};
  }
  EXPECT_THAT(Eval({0x9c}).status().message(),
              HasSubstr("DW_OP_call_frame_cfa"));
  EXPECT_THAT(Eval({0x91, 0x00}).status().message(), HasSubstr("frame base"));
}

// ---- x86: 32-bit generic type ----

TEST_F(DwarfExprTest, X86Masks32Bits) {
  UseX86();
  EXPECT_EQ(Value({0x0c, 0xff, 0xff, 0xff, 0xff, 0x32, 0x22}), 1u);  // wraps
  EXPECT_EQ(Value({0x30, 0x20}), 0xffffffffu);                       // not 0
  EXPECT_EQ(Value({0x35, 0x1f}), 0xfffffffbu);                       // neg 5
  EXPECT_EQ(Value({0x09, 0xff}), 0xffffffffu);                       // const1s
  // Signed ops see bit 31 as the sign: 0xffffffff < 1, abs is 1.
  EXPECT_EQ(Value({0x0c, 0xff, 0xff, 0xff, 0xff, 0x31, 0x2d}), 1u);
  EXPECT_EQ(Value({0x0c, 0xff, 0xff, 0xff, 0xff, 0x19}), 1u);
  // shra sign-extends from bit 31; shl drops bits above 31.
  EXPECT_EQ(Value({0x0c, 0x00, 0x00, 0x00, 0x80, 0x34, 0x26}), 0xf8000000u);
  EXPECT_EQ(Value({0x0c, 0x00, 0x00, 0x00, 0x80, 0x31, 0x24}), 0u);
  // -8 / 2 = -4 with 32-bit signedness.
  EXPECT_EQ(Value({0x0c, 0xf8, 0xff, 0xff, 0xff, 0x32, 0x1b}), 0xfffffffcu);
  // Registers and deref are 4 bytes.
  regs_.Set(4, 0x2000);
  mem_.PutLe(0x2000, 0x1122334455667788, 8);
  EXPECT_EQ(Value({0x74, 0x00, 0x06}), 0x55667788u);
  EXPECT_EQ(Value({0x74, 0x7f}), 0x1fffu);
  EXPECT_EQ(Code({0x74, 0x00, 0x94, 8}), kDataLoss);  // wider than a pointer
  EXPECT_EQ(Value({}, 0x100000005), 5u);              // initial masked
}

// ---- the x86_64 PLT CFA expression (binutils elf_x86_64_eh_frame_plt) ----

TEST_F(DwarfExprTest, X86_64PltCfaExpression) {
  // CFA = rsp + 8 + ((rip & 15) >= 11 ? 8 : 0): a PLT entry is 16 bytes and
  // its `push $index` ends at offset 11.
  const Bytes plt = {0x77, 0x08,  // DW_OP_breg7 (rsp) 8
                     0x80, 0x00,  // DW_OP_breg16 (rip) 0
                     0x3f,        // DW_OP_lit15
                     0x1a,        // DW_OP_and
                     0x3b,        // DW_OP_lit11
                     0x2a,        // DW_OP_ge
                     0x33,        // DW_OP_lit3
                     0x24,        // DW_OP_shl
                     0x22};       // DW_OP_plus
  regs_.Set(7, 0x7ffe0000);
  for (uint64_t rip : {0x1030, 0x1036, 0x103a, 0x103b, 0x103f, 0x1040}) {
    regs_.Set(16, rip);
    const uint64_t want = 0x7ffe0000 + 8 + ((rip & 15) >= 11 ? 8 : 0);
    EXPECT_EQ(Value(plt), want) << std::hex << rip;
  }
}

}  // namespace
}  // namespace unwindd::unwinder
