// CompactRow against the general interpreter: for random rows, registers
// and stacks on every arch, whenever CompactRow::From accepts a row,
// ApplyInPlace must give exactly ApplyRow's caller registers, and fail
// (leaving the registers alone) exactly when ApplyRow fails.
#include "unwinder/cfi/compact_row.h"

#include <cstdint>
#include <optional>
#include <random>

#include "absl/status/statusor.h"
#include "arch/arch.h"
#include "arch/register_set.h"
#include "gtest/gtest.h"
#include "memory/testing/map_memory.h"
#include "unwinder/cfi/apply.h"
#include "unwinder/cfi/row.h"

namespace unwindd::unwinder {
namespace {

using Kind = RegisterRule::Kind;
using arch::Arch;
using memory::testing::MapMemory;

constexpr uint64_t kStack = 0x7ff000;

Row BaseRow(const arch::ArchInfo& info) {
  Row row;
  row.cfa = CfaRule{CfaRule::Kind::kRegOffset, static_cast<uint16_t>(info.sp), 16, {}};
  row.return_address_register = static_cast<uint16_t>(info.ra);
  row.regs[info.ra] = RegisterRule{Kind::kOffset, -info.address_size, {}};
  return row;
}

bool SameRegisters(const arch::RegisterSet& a, const arch::RegisterSet& b) {
  for (int r = 0; r < arch::kMaxRegisters; ++r) {
    if (a.Valid(r) != b.Valid(r) || a.Get(r) != b.Get(r)) return false;
  }
  return true;
}

TEST(CompactRowTest, TheUsualRowIsCompactAndMatchesApplyRow) {
  const arch::ArchInfo& info = arch::GetArchInfo(Arch::kX86_64);
  Row row = BaseRow(info);
  row.regs[6] = RegisterRule{Kind::kOffset, -16, {}};  // rbp at CFA-16
  std::optional<CompactRow> c = CompactRow::From(row, info);
  ASSERT_TRUE(c.has_value());

  MapMemory mem;
  mem.PutLe(kStack + 8, 0x401000, 8);  // RA at CFA-8 (CFA = rsp+16)
  mem.PutLe(kStack, 0x7ff100, 8);      // saved rbp
  arch::RegisterSet regs(Arch::kX86_64);
  regs.Set(7, kStack);
  regs.Set(16, 0x402000);
  regs.Set(3, 0xb0b0);
  absl::StatusOr<ApplyResult> general = ApplyRow(row, regs, mem, 0);
  ASSERT_TRUE(general.ok()) << general.status();
  auto read = [&mem](uint64_t a, uint64_t* v) {
    absl::StatusOr<uint64_t> w = mem.ReadU64(a);
    if (w.ok()) *v = *w;
    return w.ok();
  };
  ASSERT_EQ(c->ApplyInPlace(regs, CompactRow::ArchFacts(info), 0, read), CompactRow::Result::kCaller);
  EXPECT_TRUE(SameRegisters(regs, general->caller));
  EXPECT_EQ(regs.pc(), 0x401000u);
  EXPECT_EQ(regs.sp(), kStack + 16);
  EXPECT_EQ(regs.Get(6), 0x7ff100u);
  EXPECT_EQ(regs.Get(3), 0xb0b0u);  // unmentioned: kept
}

TEST(CompactRowTest, RejectsWhatItCannotExpress) {
  const arch::ArchInfo& info = arch::GetArchInfo(Arch::kX86_64);
  auto rejected = [&](auto change) {
    Row row = BaseRow(info);
    change(row);
    return !CompactRow::From(row, info).has_value();
  };
  EXPECT_TRUE(rejected([](Row& r) { r.signal_frame = true; }));
  EXPECT_TRUE(rejected([](Row& r) { r.cfa.kind = CfaRule::Kind::kExpression; }));
  EXPECT_TRUE(rejected([](Row& r) { r.cfa.kind = CfaRule::Kind::kUndefined; }));
  EXPECT_TRUE(rejected([](Row& r) { r.cfa.offset = int64_t{1} << 40; }));
  EXPECT_TRUE(rejected([](Row& r) { r.regs[16].kind = Kind::kSameValue; }));
  EXPECT_TRUE(rejected([](Row& r) { r.regs[16].value = 1 << 20; }));
  EXPECT_TRUE(rejected([](Row& r) { r.regs[7] = {Kind::kValOffset, 0, {}}; }));
  EXPECT_TRUE(rejected([](Row& r) { r.regs[3] = {Kind::kRegister, 4, {}}; }));
  EXPECT_TRUE(rejected([](Row& r) { r.regs[3] = {Kind::kExpression, 0, {}}; }));
  EXPECT_TRUE(rejected([](Row& r) { r.regs[3] = {Kind::kUndefined, 0, {}}; }));
  EXPECT_TRUE(rejected([](Row& r) { r.return_address_register = 39; }));
  EXPECT_FALSE(rejected([](Row& r) { r.regs[3] = {Kind::kSameValue, 0, {}}; }));
  EXPECT_FALSE(rejected([](Row& r) { r.regs[16].kind = Kind::kUndefined; }));
  EXPECT_FALSE(rejected([](Row& r) { r.regs[33] = {Kind::kExpression, 0, {}}; }));
}

// Random rows, registers and memory; the two paths must agree.
void CheckRandom(Arch a, uint32_t seed) {
  const arch::ArchInfo& info = arch::GetArchInfo(a);
  const int w = info.address_size;
  std::mt19937 rng(seed);
  auto pick = [&rng](int n) { return static_cast<int>(rng() % n); };
  int compact = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    Row row = BaseRow(info);
    row.cfa.reg = static_cast<uint16_t>(pick(4) == 0 ? info.fp : info.sp);
    if (pick(20) == 0) row.cfa.reg = static_cast<uint16_t>(pick(info.num_regs));
    row.cfa.offset = (pick(16) - 2) * w;
    if (pick(30) == 0) row.cfa.offset = -(int64_t{1} << 33);
    row.regs[info.ra].value = -(pick(6) + 1) * w;
    if (pick(30) == 0) row.regs[info.ra].kind = Kind::kUndefined;
    for (int n = pick(8); n > 0; --n) {
      int r = pick(info.num_regs);
      if (r == info.ra) continue;
      Kind k = pick(10) == 0 ? static_cast<Kind>(pick(6)) : Kind::kOffset;
      row.regs[r] = RegisterRule{k, -(pick(12) + 1) * w, {}};
      if (k == Kind::kRegister) row.regs[r].value = pick(info.num_regs);
    }
    std::optional<CompactRow> c = CompactRow::From(row, info);
    if (!c.has_value()) continue;
    ++compact;

    MapMemory mem;
    const int readable = 4 + pick(24);  // words readable above the stack base
    for (int i = 0; i < readable; ++i) {
      mem.PutLe(kStack + i * w, rng() | (uint64_t{rng()} << 32), w);
    }
    arch::RegisterSet regs(a);
    for (int r = 0; r < arch::kMaxRegisters; ++r) {
      if (pick(5) != 0) regs.Set(r, rng() | (uint64_t{rng()} << 32));
    }
    regs.Set(info.sp, kStack + pick(4) * w);
    if (pick(3) == 0) regs.Set(info.fp, kStack + pick(8) * w);

    // Frame 0 (slots below sp were popped) or a caller frame.
    const uint64_t restored_below = pick(2) == 0 ? regs.Get(info.sp) + pick(3) * w : 0;
    absl::StatusOr<ApplyResult> general = ApplyRow(row, regs, mem, 0, restored_below);
    arch::RegisterSet fast = regs;
    CompactRow::Result result = c->ApplyInPlace(
        fast, CompactRow::ArchFacts(info), restored_below, [&](uint64_t addr, uint64_t* v) {
      absl::StatusOr<uint64_t> word = mem.ReadWord(addr, w);
      if (word.ok()) *v = *word;
      return word.ok();
    });
    ASSERT_EQ(result != CompactRow::Result::kFailed, general.ok())
        << "iteration " << iter << ": " << general.status();
    if (result == CompactRow::Result::kCaller) {
      ASSERT_FALSE(general->ra_undefined) << "iteration " << iter;
      ASSERT_TRUE(SameRegisters(fast, general->caller)) << "iteration " << iter;
    } else {
      // Failed, or outermost: the registers are left as they were.
      ASSERT_EQ(result == CompactRow::Result::kOutermost,
                general.ok() && general->ra_undefined) << "iteration " << iter;
      ASSERT_TRUE(SameRegisters(fast, regs)) << "iteration " << iter;
    }
  }
  EXPECT_GT(compact, 1000);
}

TEST(CompactRowTest, AgreesWithApplyRowOnX86_64) { CheckRandom(Arch::kX86_64, 1); }
TEST(CompactRowTest, AgreesWithApplyRowOnAArch64) { CheckRandom(Arch::kAArch64, 2); }
TEST(CompactRowTest, AgreesWithApplyRowOnX86) { CheckRandom(Arch::kX86, 3); }

}  // namespace
}  // namespace unwindd::unwinder
