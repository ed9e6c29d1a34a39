// StackWindow: bulk reads of the stack above sp, growth by doubling, the
// guard page, reads below and beyond the window, and a held copy used in
// place.
#include "memory/stack_window.h"

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "memory/memory.h"
#include "memory/testing/map_memory.h"

namespace unwindd::memory {
namespace {

// Counts the reads that reach it, and how many bytes they asked for.
class CountingMemory final : public Memory {
 public:
  explicit CountingMemory(Memory& inner) : inner_(inner) {}
  size_t Read(uint64_t addr, absl::Span<uint8_t> dst) override {
    ++reads;
    return inner_.Read(addr, dst);
  }
  int reads = 0;

 private:
  Memory& inner_;
};

constexpr uint64_t kLo = 0x100000;
constexpr uint64_t kHi = 0x140000;  // a 256 KiB stack mapping

// Every word of [lo, hi) holds its own address.
testing::MapMemory StackOfAddresses(uint64_t lo, uint64_t hi) {
  testing::MapMemory m;
  for (uint64_t a = lo; a < hi; a += 8) m.PutLe(a, a, 8);
  return m;
}

TEST(StackWindowTest, ReadsTheStackInFewBulkReads) {
  testing::MapMemory stack = StackOfAddresses(kLo, kHi);
  CountingMemory counting(stack);
  const uint64_t sp = kLo + 0x100;
  StackWindow w(counting, sp);
  w.ReadAhead(kLo, kHi);
  EXPECT_EQ(counting.reads, 1);
  // Walk every word up to the top: the window doubles, so a 256 KiB walk
  // costs a handful of reads, not one per word or per page.
  for (uint64_t a = sp; a < kHi; a += 8) {
    uint64_t v = 0;
    ASSERT_TRUE(w.ReadWordFast(a, 8, &v)) << std::hex << a;
    ASSERT_EQ(v, a);
  }
  EXPECT_LE(counting.reads, 8);
  EXPECT_EQ(w.bytes_copied(), kHi - sp);
}

TEST(StackWindowTest, AHintSizesTheFirstRead) {
  testing::MapMemory stack = StackOfAddresses(kLo, kHi);
  const uint64_t sp = kLo + 0x100;
  const uint64_t top = kLo + 0x9000;  // where an earlier unwind stopped
  {
    CountingMemory counting(stack);
    StackWindow w(counting, sp);
    w.ReadAhead(kLo, kHi);
    uint64_t v = 0;
    for (uint64_t a = sp; a < top; a += 8) ASSERT_TRUE(w.ReadWordFast(a, 8, &v));
    EXPECT_GT(counting.reads, 1);
    EXPECT_EQ(w.highest_read(), top);
  }
  CountingMemory counting(stack);
  StackWindow w(counting, sp);
  w.ReadAhead(kLo, kHi, top);
  uint64_t v = 0;
  for (uint64_t a = sp; a < top; a += 8) ASSERT_TRUE(w.ReadWordFast(a, 8, &v));
  EXPECT_EQ(counting.reads, 1);
  EXPECT_LT(w.bytes_copied(), top - sp + 4096);
  // Beyond the hint the window still grows.
  ASSERT_TRUE(w.ReadWordFast(kHi - 8, 8, &v));
  EXPECT_EQ(v, kHi - 8);
}

// The first read done by the caller (all threads' stacks in one
// ReadMany): the window adopts those bytes, reads nothing more for them,
// and still grows beyond them.
TEST(StackWindowTest, AdoptsAFirstReadDoneByTheCaller) {
  testing::MapMemory stack = StackOfAddresses(kLo, kHi);
  CountingMemory counting(stack);
  const uint64_t sp = kLo + 0x100;
  const uint64_t end = StackWindow::FirstReadEnd(sp, kLo, kHi, 0);
  ASSERT_GT(end, sp);
  ASSERT_LE(end, kHi);
  const uint64_t size = end - sp;
  std::unique_ptr<uint8_t[]> bytes(new uint8_t[size]);
  ASSERT_EQ(stack.Read(sp, absl::MakeSpan(bytes.get(), size)), size);
  StackWindow w(counting, sp);
  w.Adopt(kLo, kHi, std::move(bytes), size, size);
  w.ReadAhead(kLo, kHi);  // nothing more: the window is there
  uint64_t v = 0;
  for (uint64_t a = sp; a + 8 <= end; a += 8) {
    ASSERT_TRUE(w.ReadWordFast(a, 8, &v));
    ASSERT_EQ(v, a);
  }
  EXPECT_EQ(counting.reads, 0);
  ASSERT_TRUE(w.ReadWordFast(kHi - 8, 8, &v));
  EXPECT_EQ(v, kHi - 8);
  EXPECT_GT(counting.reads, 0);
  // A short first read (a guard page above): the window does not grow.
  std::unique_ptr<uint8_t[]> part(new uint8_t[size]);
  ASSERT_EQ(stack.Read(sp, absl::MakeSpan(part.get(), 64)), 64u);
  CountingMemory counting2(stack);
  StackWindow short_window(counting2, sp);
  short_window.Adopt(kLo, kHi, std::move(part), size, 64);
  ASSERT_TRUE(short_window.ReadWordFast(sp + 56, 8, &v));
  EXPECT_EQ(v, sp + 56);
  EXPECT_EQ(short_window.bytes_copied(), 64u);
}

TEST(StackWindowTest, ReadsOutsideTheWindowGoToTheMemoryBeneath) {
  testing::MapMemory m = StackOfAddresses(kLo, kHi);
  m.PutLe(0x5000, 0x1234, 4);  // somewhere else entirely
  StackWindow w(m, kLo + 0x800);
  w.ReadAhead(kLo, kHi);
  uint64_t v = 0;
  ASSERT_TRUE(w.ReadWordFast(kLo + 0x10, 8, &v));  // below sp (red zone)
  EXPECT_EQ(v, kLo + 0x10);
  ASSERT_TRUE(w.ReadWordFast(0x5000, 4, &v));
  EXPECT_EQ(v, 0x1234u);
  EXPECT_FALSE(w.ReadWordFast(0x9000, 8, &v));
  EXPECT_FALSE(w.ReadWordFast(kHi, 8, &v));  // past the mapping
  // A Read straddling sp: bytes below from beneath, then the window's.
  std::vector<uint8_t> buf(16);
  EXPECT_EQ(w.ReadFully(kLo + 0x7f8, absl::MakeSpan(buf)).ok(), true);
  EXPECT_EQ(buf[0], 0xf8);
  EXPECT_EQ(buf[8], 0x00);
  EXPECT_EQ(buf[9], 0x08);
}

TEST(StackWindowTest, StopsAtAnUnreadablePage) {
  // Only the first 12 KiB of the mapping is readable.
  testing::MapMemory m = StackOfAddresses(kLo, kLo + 0x3000);
  StackWindow w(m, kLo);
  w.ReadAhead(kLo, kHi);
  uint64_t v = 0;
  EXPECT_TRUE(w.ReadWordFast(kLo + 0x2ff8, 8, &v));
  EXPECT_FALSE(w.ReadWordFast(kLo + 0x3000, 8, &v));
  EXPECT_FALSE(w.ReadWordFast(kLo + 0x3ff8, 8, &v));
  EXPECT_EQ(w.bytes_copied(), 0x3000u);
  // A word half in the readable part is unreadable as a whole.
  EXPECT_FALSE(w.ReadWordFast(kLo + 0x2ffc, 8, &v));
}

TEST(StackWindowTest, WithoutBoundsNothingIsReadAhead) {
  testing::MapMemory stack = StackOfAddresses(kLo, kHi);
  CountingMemory counting(stack);
  StackWindow w(counting, kLo + 0x100);
  w.ReadAhead(0, 0);
  EXPECT_EQ(counting.reads, 0);
  uint64_t v = 0;
  ASSERT_TRUE(w.ReadWordFast(kLo + 0x108, 8, &v));
  EXPECT_EQ(v, kLo + 0x108);
  EXPECT_EQ(w.bytes_copied(), 0u);
}

// A memory that already holds the stack as one copy (a snapshot).
class HeldMemory final : public Memory {
 public:
  HeldMemory(uint64_t start, std::vector<uint8_t> bytes)
      : start_(start), bytes_(std::move(bytes)) {}
  size_t Read(uint64_t addr, absl::Span<uint8_t> dst) override {
    ++reads;
    if (addr < start_ || addr - start_ >= bytes_.size()) return 0;
    size_t n = std::min<uint64_t>(dst.size(), bytes_.size() - (addr - start_));
    std::copy_n(bytes_.begin() + (addr - start_), n, dst.begin());
    return n;
  }
  HeldBytes HeldBytesAt(uint64_t addr) override {
    if (addr < start_ || addr - start_ >= bytes_.size()) return {};
    return {start_, absl::MakeConstSpan(bytes_)};
  }
  int reads = 0;

 private:
  uint64_t start_;
  std::vector<uint8_t> bytes_;
};

TEST(StackWindowTest, UsesAHeldCopyInPlace) {
  std::vector<uint8_t> bytes(64);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i);
  HeldMemory held(0x7000, bytes);
  StackWindow w(held, 0x7010);
  w.ReadAhead(0x6000, 0x8000);
  uint64_t v = 0;
  ASSERT_TRUE(w.ReadWordFast(0x7038, 8, &v));
  EXPECT_EQ(v, 0x3f3e3d3c3b3a3938u);
  EXPECT_EQ(held.reads, 0);
  EXPECT_EQ(w.bytes_copied(), 0u);
  EXPECT_FALSE(w.ReadWordFast(0x703c, 8, &v));  // runs off the copy
  EXPECT_EQ(w.HeldBytesAt(0x7020).start, 0x7000u);
}

// A memory that holds the stack in two adjacent pieces (a server's
// received message split between two buffers).
class TwoPieceMemory final : public Memory {
 public:
  TwoPieceMemory(uint64_t start, std::vector<uint8_t> head, std::vector<uint8_t> tail)
      : start_(start), head_(std::move(head)), tail_(std::move(tail)) {}
  size_t Read(uint64_t addr, absl::Span<uint8_t> dst) override {
    ++reads;
    HeldBytes h = HeldBytesAt(addr);
    if (h.bytes.empty()) return 0;
    size_t n = std::min<uint64_t>(dst.size(), h.bytes.size() - (addr - h.start));
    std::copy_n(h.bytes.begin() + (addr - h.start), n, dst.begin());
    return n;
  }
  HeldBytes HeldBytesAt(uint64_t addr) override {
    if (addr >= start_ && addr - start_ < head_.size()) {
      return {start_, absl::MakeConstSpan(head_)};
    }
    const uint64_t tail_start = start_ + head_.size();
    if (addr >= tail_start && addr - tail_start < tail_.size()) {
      return {tail_start, absl::MakeConstSpan(tail_)};
    }
    return {};
  }
  int reads = 0;

 private:
  uint64_t start_;
  std::vector<uint8_t> head_;
  std::vector<uint8_t> tail_;
};

// Every word of a copy held in two pieces reads as from one copy: from
// either piece in place, across the cut, and back down again.
TEST(StackWindowTest, UsesACopyHeldInTwoPiecesInPlace) {
  std::vector<uint8_t> bytes(96);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i);
  for (size_t cut : {1, 20, 44, 95}) {
    SCOPED_TRACE(cut);
    TwoPieceMemory held(0x7000, std::vector<uint8_t>(bytes.begin(), bytes.begin() + cut),
                        std::vector<uint8_t>(bytes.begin() + cut, bytes.end()));
    StackWindow w(held, 0x7000);
    w.ReadAhead(0x6000, 0x8000);
    EXPECT_TRUE(w.holds_copy());
    uint64_t want = 0;
    for (uint64_t off : {0, 16, 40, 88, 3, 60, 41}) {
      std::memcpy(&want, bytes.data() + off, 8);
      uint64_t v = 0;
      ASSERT_TRUE(w.ReadWordFast(0x7000 + off, 8, &v)) << off;
      EXPECT_EQ(v, want) << off;
      uint32_t v4 = 0;
      uint64_t v32 = 0;
      ASSERT_TRUE(w.ReadWordFast(0x7000 + off, 4, &v32)) << off;
      std::memcpy(&v4, bytes.data() + off, 4);
      EXPECT_EQ(v32, v4) << off;
    }
    // Whole reads across the cut, and off the end.
    std::vector<uint8_t> all(96);
    EXPECT_EQ(w.Read(0x7000, absl::MakeSpan(all)), 96u);
    EXPECT_EQ(all, bytes);
    uint64_t v = 0;
    EXPECT_FALSE(w.ReadWordFast(0x705c, 8, &v));  // runs off the copy
    EXPECT_EQ(w.highest_read(), 0x7060u);
    EXPECT_EQ(w.bytes_copied(), 0u);
    EXPECT_EQ(w.HeldBytesAt(0x7000 + cut).start, 0x7000 + cut);
    EXPECT_EQ(w.HeldBytesAt(0x7000).start, 0x7000u);
  }
}

// The highest byte read is an address, the same whichever piece a word
// came from, and a check's reads can be taken back.
TEST(StackWindowTest, HighestReadAcrossPieces) {
  std::vector<uint8_t> bytes(64, 0);
  TwoPieceMemory held(0x7000, std::vector<uint8_t>(bytes.begin(), bytes.begin() + 32),
                      std::vector<uint8_t>(bytes.begin() + 32, bytes.end()));
  StackWindow w(held, 0x7000);
  uint64_t v = 0;
  ASSERT_TRUE(w.ReadWordFast(0x7008, 8, &v));
  EXPECT_EQ(w.highest_read(), 0x7010u);
  const uint64_t mark = w.high_mark();
  ASSERT_TRUE(w.ReadWordFast(0x7030, 8, &v));
  EXPECT_EQ(w.highest_read(), 0x7038u);
  w.reset_high_mark(mark);
  EXPECT_EQ(w.highest_read(), 0x7010u);
  ASSERT_TRUE(w.ReadWordFast(0x7000, 8, &v));  // back in the first piece
  EXPECT_EQ(w.highest_read(), 0x7010u);
  EXPECT_EQ(held.reads, 0);
}

}  // namespace
}  // namespace unwindd::memory
