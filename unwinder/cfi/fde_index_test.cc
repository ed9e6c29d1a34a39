// CfiSection::FindFde: the index built over every FDE of a section.
#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "arch/arch.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "unwinder/cfi/cfi_section.h"
#include "unwinder/cfi/encoding.h"
#include "unwinder/cfi/test_bytes.h"

namespace unwindd::unwinder {
namespace {

using arch::Arch;
using ::testing::HasSubstr;

// A CIE with absolute 8-byte FDE addresses keeps the arithmetic readable.
size_t AppendCie(TestBytes& s) {
  return AppendEhCie(
      s, TestBytes().U8(1).Str("zR").Uleb(1).Sleb(-8).U8(16).Uleb(1).U8(
             kPeUdata8));
}

size_t AppendFde(TestBytes& s, size_t cie, uint64_t begin, uint64_t end) {
  return AppendEhFde(s, cie, TestBytes().U64(begin).U64(end - begin).Uleb(0));
}

// Returns pc_begin of the FDE found for `pc`, or 0 if none.
uint64_t Find(CfiSection& section, uint64_t pc) {
  absl::StatusOr<Fde> fde = section.FindFde(pc);
  if (!fde.ok()) {
    EXPECT_EQ(fde.status().code(), absl::StatusCode::kNotFound) << fde.status();
    return 0;
  }
  EXPECT_LE(fde->pc_begin, pc);
  EXPECT_LT(pc, fde->pc_end);
  return fde->pc_begin;
}

TEST(FdeIndexTest, FindsFirstLastAndNothingInBetween) {
  TestBytes s;
  const size_t cie = AppendCie(s);
  // Deliberately out of order in the section.
  AppendFde(s, cie, 0x3000, 0x3100);
  AppendFde(s, cie, 0x1000, 0x1010);
  AppendFde(s, cie, 0x2000, 0x2400);
  s.U32(0);  // terminator
  CfiSection eh(CfiKind::kEhFrame, s.span(), 0x10000, Arch::kX86_64, {});

  EXPECT_EQ(eh.IndexedFdeCount(), 3u);
  EXPECT_EQ(Find(eh, 0x1000), 0x1000u);  // first byte of the first
  EXPECT_EQ(Find(eh, 0x100f), 0x1000u);
  EXPECT_EQ(Find(eh, 0x2000), 0x2000u);
  EXPECT_EQ(Find(eh, 0x23ff), 0x2000u);
  EXPECT_EQ(Find(eh, 0x30ff), 0x3000u);  // last byte of the last

  EXPECT_EQ(Find(eh, 0xfff), 0u);   // below everything
  EXPECT_EQ(Find(eh, 0x1010), 0u);  // pc_end is exclusive
  EXPECT_EQ(Find(eh, 0x1800), 0u);  // between FDEs
  EXPECT_EQ(Find(eh, 0x3100), 0u);  // past the last
  absl::StatusOr<Fde> none = eh.FindFde(0x1800);
  EXPECT_EQ(none.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(none.status().message(), HasSubstr("0x1800"));
}

TEST(FdeIndexTest, OverlappingFdesPickTheOneContainingThePc) {
  TestBytes s;
  const size_t cie = AppendCie(s);
  AppendFde(s, cie, 0x1000, 0x2000);  // outer
  AppendFde(s, cie, 0x1100, 0x1200);  // nested
  AppendFde(s, cie, 0x1300, 0x1310);  // nested
  CfiSection eh(CfiKind::kEhFrame, s.span(), 0, Arch::kX86_64, {});

  EXPECT_EQ(Find(eh, 0x1050), 0x1000u);
  EXPECT_EQ(Find(eh, 0x1150), 0x1100u);  // innermost wins
  // The closest FDE below (0x1300) ends before the pc; the outer one covers.
  EXPECT_EQ(Find(eh, 0x1500), 0x1000u);
  EXPECT_EQ(Find(eh, 0x1250), 0x1000u);
  EXPECT_EQ(Find(eh, 0x2000), 0u);
}

TEST(FdeIndexTest, SkipsEmptyAndUnparsableFdesAndCies) {
  TestBytes s;
  const size_t cie = AppendCie(s);
  AppendFde(s, cie, 0x1000, 0x1000);                         // empty range
  AppendEntry(s, s.size() + 4 + 0x100, TestBytes().U64(0));  // bad CIE ptr
  AppendEhFde(s, cie, TestBytes().U32(7));                   // truncated FDE
  const size_t bad_cie = AppendEhCie(s, TestBytes().U8(9).Str(""));
  AppendFde(s, bad_cie, 0x5000, 0x5010);  // its CIE is bad
  AppendFde(s, bad_cie, 0x6000, 0x6010);  // (cached failure)
  AppendCie(s);                           // a second CIE
  AppendFde(s, cie, 0x2000, 0x2010);
  CfiSection eh(CfiKind::kEhFrame, s.span(), 0, Arch::kX86_64, {});

  EXPECT_EQ(eh.IndexedFdeCount(), 1u);
  EXPECT_EQ(Find(eh, 0x1000), 0u);
  EXPECT_EQ(Find(eh, 0x5000), 0u);
  EXPECT_EQ(Find(eh, 0x2008), 0x2000u);
}

TEST(FdeIndexTest, StopsAtTheTerminator) {
  TestBytes s;
  const size_t cie = AppendCie(s);
  AppendFde(s, cie, 0x1000, 0x1010);
  s.U32(0);
  // After the end marker: not indexed.
  const size_t late = AppendFde(s, cie, 0x2000, 0x2010);
  CfiSection eh(CfiKind::kEhFrame, s.span(), 0, Arch::kX86_64, {});
  EXPECT_EQ(eh.IndexedFdeCount(), 1u);
  EXPECT_EQ(Find(eh, 0x2000), 0u);
  // ...though an explicit offset (from .eh_frame_hdr) still parses.
  EXPECT_TRUE(eh.ParseFdeAt(late).ok());
}

TEST(FdeIndexTest, StopsAtAMalformedLength) {
  TestBytes s;
  const size_t cie = AppendCie(s);
  AppendFde(s, cie, 0x1000, 0x1010);
  s.U32(0xfffffff5u).U32(0);  // reserved length: the walk cannot go on
  AppendFde(s, cie, 0x2000, 0x2010);
  CfiSection eh(CfiKind::kEhFrame, s.span(), 0, Arch::kX86_64, {});
  EXPECT_EQ(eh.IndexedFdeCount(), 1u);

  TestBytes s2;
  const size_t cie2 = AppendCie(s2);
  AppendFde(s2, cie2, 0x1000, 0x1010);
  s2.U32(0x1000).U32(0);  // runs past the end
  CfiSection eh2(CfiKind::kEhFrame, s2.span(), 0, Arch::kX86_64, {});
  EXPECT_EQ(eh2.IndexedFdeCount(), 1u);
  EXPECT_EQ(Find(eh2, 0x1004), 0x1000u);
}

TEST(FdeIndexTest, EmptyAndGarbageSections) {
  TestBytes empty;
  CfiSection eh(CfiKind::kEhFrame, empty.span(), 0, Arch::kX86_64, {});
  EXPECT_EQ(eh.IndexedFdeCount(), 0u);
  EXPECT_EQ(eh.FindFde(0x1000).status().code(), absl::StatusCode::kNotFound);

  TestBytes garbage;
  for (int i = 0; i < 64; ++i) garbage.U8(static_cast<uint8_t>(i * 37 + 11));
  CfiSection g(CfiKind::kEhFrame, garbage.span(), 0, Arch::kX86_64, {});
  EXPECT_EQ(g.FindFde(0x1000).status().code(), absl::StatusCode::kNotFound);
}

TEST(FdeIndexTest, DebugFrameIndex) {
  TestBytes s;
  const size_t cie = AppendEntry(
      s, 0xffffffffu, TestBytes().U8(3).Str("").Uleb(1).Sleb(-8).Uleb(16));
  AppendEntry(s, cie, TestBytes().U64(0x401000).U64(0x80));
  AppendEntry(s, cie, TestBytes().U64(0x400800).U64(0x10));
  CfiSection df(CfiKind::kDebugFrame, s.span(), 0, Arch::kX86_64, {});
  EXPECT_EQ(df.IndexedFdeCount(), 2u);
  EXPECT_EQ(Find(df, 0x401040), 0x401000u);
  EXPECT_EQ(Find(df, 0x400808), 0x400800u);
  EXPECT_EQ(Find(df, 0x400810), 0u);
}

}  // namespace
}  // namespace unwindd::unwinder
