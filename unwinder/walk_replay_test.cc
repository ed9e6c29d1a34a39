#include "unwinder/walk_replay.h"

#include <cstdint>
#include <optional>
#include <vector>

#include "arch/arch.h"
#include "gtest/gtest.h"
#include "unwinder/cfi/row.h"

namespace unwindd::unwinder {
namespace {

using Kind = RegisterRule::Kind;

const arch::ArchInfo& X86() { return arch::GetArchInfo(arch::Arch::kX86_64); }
constexpr int kRbp = 6;

// CFA = reg + offset, return address at CFA - 8, and rbp saved at
// CFA + rbp_at if given; or the return address undefined.
CompactRow MakeRow(int cfa_reg, int offset, std::optional<int> rbp_at = std::nullopt,
                   bool outermost = false) {
  const arch::ArchInfo& info = X86();
  Row row;
  row.cfa = CfaRule{CfaRule::Kind::kRegOffset, static_cast<uint16_t>(cfa_reg), offset, {}};
  row.return_address_register = static_cast<uint16_t>(info.ra);
  row.regs[info.ra] = outermost ? RegisterRule{Kind::kUndefined, 0, {}}
                                : RegisterRule{Kind::kOffset, -8, {}};
  if (rbp_at) row.regs[kRbp] = RegisterRule{Kind::kOffset, *rbp_at, {}};
  std::optional<CompactRow> c = CompactRow::From(row, info);
  EXPECT_TRUE(c.has_value());
  return c.value_or(CompactRow());
}

Frame F(uint64_t pc, uint64_t sp) { return Frame{pc, sp, Method::kEhFrame, 0, pc - 0x1000, 0}; }

// A walk of `frames` (innermost first), each stepped by the row given for
// it, the last one finding the return address undefined.
void Record(WalkReplay& r, uint64_t key, const std::vector<Frame>& frames,
            const std::vector<CompactRow>& rows, const std::vector<uint64_t>& cfa_values,
            WalkReplay::End end = WalkReplay::End::kUndefined) {
  ASSERT_NE(r.Begin(key, X86().sp), WalkReplay::Mode::kNone);
  for (size_t i = 0; i < frames.size(); ++i) {
    r.AddFrame(/*instruction_pointer=*/i == 0);
    r.EndStep(rows[i], cfa_values[i]);
  }
  r.Commit(key, frames.data(), -1, StopReason::kEndOfStack, "", end, 0);
}

TEST(WalkReplayTest, RecordsOutermostFirstWithWhatEachStepRead) {
  WalkReplay r;
  const int sp = X86().sp;
  // leaf (where the thread was), a caller, main, _start.
  Record(r, 7, {F(0x1100, 0x7000), F(0x1200, 0x7010), F(0x1300, 0x7040), F(0x1400, 0x7080)},
         {MakeRow(sp, 16), MakeRow(sp, 48), MakeRow(sp, 64), MakeRow(sp, 8, {}, true)},
         {0x7000, 0x7010, 0x7040, 0x7080});
  ASSERT_NE(r.Begin(7, sp), WalkReplay::Mode::kNone);
  const WalkReplay::Record* rec = r.last();
  ASSERT_NE(rec, nullptr);
  ASSERT_EQ(rec->frames.size(), 4u);
  EXPECT_EQ(rec->frames[0].pc, 0x1400u);  // outermost first
  EXPECT_EQ(rec->frames[3].pc, 0x1100u);
  EXPECT_EQ(rec->end, WalkReplay::End::kUndefined);
  // Every return-address frame can be replayed from; the leaf (where the
  // thread was, whose epilogue rule differs) cannot.
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(rec->checks[i].replayable) << i;
    EXPECT_EQ(rec->checks[i].need_reg, -1) << i;  // SP-based CFAs need nothing
  }
  EXPECT_FALSE(rec->checks[3].replayable);
  EXPECT_EQ(rec->checks[1].ra_offset, -8);
}

TEST(WalkReplayTest, AFramePointerCfaNeedsItsRegisterUntilAStepRestoresIt) {
  WalkReplay r;
  const int sp = X86().sp;
  // Frame-pointer code: every CFA is rbp + 16, rbp saved at CFA - 16.
  Record(r, 1, {F(0x1100, 0x7000), F(0x1200, 0x7010), F(0x1300, 0x7040), F(0x1400, 0x7080)},
         {MakeRow(kRbp, 16, -16), MakeRow(kRbp, 16, -16), MakeRow(kRbp, 16, -16),
          MakeRow(sp, 8, {}, true)},
         {0x7020, 0x7050, 0x7090, 0});
  ASSERT_NE(r.Begin(1, sp), WalkReplay::Mode::kNone);
  const WalkReplay::Record* rec = r.last();
  ASSERT_NE(rec, nullptr);
  // main (index 1) needs rbp as it was; its callee (index 2) restores it
  // from its slot, which is then checked instead, and needs its own.
  EXPECT_TRUE(rec->checks[1].replayable);
  EXPECT_EQ(rec->checks[1].need_reg, kRbp);
  EXPECT_EQ(rec->extras[1].need_value, 0x7090u);
  EXPECT_FALSE(rec->checks[1].slot);
  EXPECT_TRUE(rec->checks[2].replayable);
  EXPECT_TRUE(rec->checks[2].slot);
  EXPECT_EQ(rec->checks[2].slot_offset, -16);
  EXPECT_EQ(rec->extras[2].slot_value, 0x7090u);
  EXPECT_EQ(rec->checks[2].need_reg, kRbp);
  EXPECT_EQ(rec->extras[2].need_value, 0x7050u);
}

TEST(WalkReplayTest, AWalkThatEndedOnAnErrorIsNotKeptAndThreadsThatKeepFailingAreSkipped) {
  WalkReplay r;
  const int sp = X86().sp;
  for (uint32_t i = 0; i < WalkReplay::kSkipAfter; ++i) {
    Record(r, 3, {F(0x1100, 0x7000), F(0x1200, 0x7010)}, {MakeRow(sp, 16), MakeRow(sp, 16)},
           {0, 0}, WalkReplay::End::kNone);
  }
  // Now only every kRetryEvery-th walk of that thread is recorded.
  int recorded = 0;
  for (uint32_t i = 0; i < 4 * WalkReplay::kRetryEvery; ++i) {
    if (r.Begin(3, sp) != WalkReplay::Mode::kNone) {
      ++recorded;
      EXPECT_EQ(r.last(), nullptr);
      r.Commit(3, nullptr, -1, StopReason::kMemoryError, "", WalkReplay::End::kNone, 0);
    }
  }
  EXPECT_EQ(recorded, 4);
  // Other threads are not affected; a recorded walk that ends well resets
  // the count.
  EXPECT_EQ(r.Begin(4, sp), WalkReplay::Mode::kRecord);
  bool began = false;
  for (uint32_t i = 0; i < WalkReplay::kRetryEvery && !began; ++i) {
    began = r.Begin(3, sp) != WalkReplay::Mode::kNone;
  }
  ASSERT_TRUE(began);
  const std::vector<Frame> frames = {F(0x1100, 0x7000), F(0x1400, 0x7080)};
  r.AddFrame(true);
  r.EndStep(MakeRow(sp, 16), 0);
  r.AddFrame(false);
  r.EndStep(MakeRow(sp, 8, {}, true), 0);
  r.Commit(3, frames.data(), -1, StopReason::kEndOfStack, "", WalkReplay::End::kUndefined, 0);
  for (int i = 0; i < 3; ++i) {
    ASSERT_NE(r.Begin(3, sp), WalkReplay::Mode::kNone);
    EXPECT_NE(r.last(), nullptr);
    r.AddFrame(true);
    r.Commit(3, frames.data(), 0, StopReason::kEndOfStack, "", WalkReplay::End::kNone, 0);
  }
}

TEST(WalkReplayTest, AJunctionKeepsTheOuterPartAndTakesTheWalksInnerFrames) {
  WalkReplay r;
  const int sp = X86().sp;
  Record(r, 9, {F(0x1100, 0x7000), F(0x1200, 0x7010), F(0x1300, 0x7040), F(0x1400, 0x7080)},
         {MakeRow(sp, 16), MakeRow(sp, 48), MakeRow(sp, 64), MakeRow(sp, 8, {}, true)},
         {0, 0, 0, 0});
  // A new walk: a different leaf and caller, then the old record's frame 2
  // (index 1, 0x1300 at 0x7040), from which the rest was taken.
  ASSERT_NE(r.Begin(9, sp), WalkReplay::Mode::kNone);
  std::vector<Frame> walk = {F(0x1500, 0x6f00), F(0x1600, 0x6f20), F(0x1300, 0x7040)};
  walk[2].method = Method::kSframe;  // reached another way this time
  r.AddFrame(true);
  r.EndStep(MakeRow(sp, 32), 0);
  r.AddFrame(false);
  r.EndStep(MakeRow(sp, 0x120), 0);
  r.AddFrame(false);
  r.Commit(9, walk.data(), /*junction=*/1, StopReason::kEndOfStack, "",
           WalkReplay::End::kNone, 0);
  EXPECT_EQ(r.stats().replayed_walks, 1u);
  EXPECT_EQ(r.stats().replayed_frames, 1u);  // _start, taken from the record
  ASSERT_NE(r.Begin(9, sp), WalkReplay::Mode::kNone);
  const WalkReplay::Record* rec = r.last();
  ASSERT_NE(rec, nullptr);
  ASSERT_EQ(rec->frames.size(), 4u);
  EXPECT_EQ(rec->frames[0].pc, 0x1400u);
  EXPECT_EQ(rec->frames[1].pc, 0x1300u);
  EXPECT_EQ(rec->frames[1].method, Method::kSframe);
  EXPECT_EQ(rec->frames[2].pc, 0x1600u);
  EXPECT_EQ(rec->frames[3].pc, 0x1500u);
  EXPECT_TRUE(rec->checks[2].replayable);
  EXPECT_FALSE(rec->checks[3].replayable);
  EXPECT_EQ(rec->end, WalkReplay::End::kUndefined);  // the old record's end
}

TEST(WalkReplayTest, AThreadRecordsAgainOnlyWhenItsRecordServedItPoorly) {
  WalkReplay r;
  const int sp = X86().sp;
  EXPECT_EQ(r.Begin(2, sp), WalkReplay::Mode::kRecord);  // no record yet
  Record(r, 2, {F(0x1100, 0x7000), F(0x1200, 0x7010), F(0x1300, 0x7040), F(0x1400, 0x7080)},
         {MakeRow(sp, 16), MakeRow(sp, 48), MakeRow(sp, 64), MakeRow(sp, 8, {}, true)},
         {0, 0, 0, 0});
  // The record serves as it is while walks take more frames from it than
  // they step through.
  EXPECT_EQ(r.Begin(2, sp), WalkReplay::Mode::kReplay);
  r.Reused(/*junction=*/2, /*stepped=*/1);
  EXPECT_EQ(r.Begin(2, sp), WalkReplay::Mode::kReplay);
  r.Reused(/*junction=*/1, /*stepped=*/3);  // stepped more than it took
  EXPECT_EQ(r.Begin(2, sp), WalkReplay::Mode::kRecord);
  Record(r, 2, {F(0x1500, 0x6f00), F(0x1400, 0x7080)},
         {MakeRow(sp, 0x180), MakeRow(sp, 8, {}, true)}, {0, 0});
  EXPECT_EQ(r.Begin(2, sp), WalkReplay::Mode::kReplay);
  r.Reused(/*junction=*/-1, /*stepped=*/0);  // no junction at all
  EXPECT_EQ(r.Begin(2, sp), WalkReplay::Mode::kRecord);
  EXPECT_EQ(r.stats().walks, 5u);
  EXPECT_EQ(r.stats().replayed_walks, 2u);
  EXPECT_EQ(r.stats().replayed_frames, 3u);
}

TEST(WalkReplayTest, WalksTooLongToKeepAreNot) {
  WalkReplay r;
  const int sp = X86().sp;
  std::vector<Frame> frames;
  std::vector<CompactRow> rows;
  for (size_t i = 0; i <= WalkReplay::kMaxRecordFrames; ++i) {
    frames.push_back(F(0x1100 + i, 0x7000 + 16 * i));
    rows.push_back(MakeRow(sp, 16));
  }
  rows.back() = MakeRow(sp, 8, {}, true);
  Record(r, 5, frames, rows, std::vector<uint64_t>(frames.size(), 0));
  ASSERT_NE(r.Begin(5, sp), WalkReplay::Mode::kNone);
  EXPECT_EQ(r.last(), nullptr);
  EXPECT_EQ(r.frames(), 0u);
}

}  // namespace
}  // namespace unwindd::unwinder
