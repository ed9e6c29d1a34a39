// The page cache: whole-page inner reads, counted through a fake.
#include <cstdint>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "memory/factories.h"
#include "memory/memory.h"

namespace unwindd::memory {
namespace {

// Forwards to a buffer and records every inner Read.
class CountingMemory final : public Memory {
 public:
  CountingMemory(uint64_t start, std::vector<uint8_t> bytes)
      : inner_(CreateBufferMemory(start, std::move(bytes))) {}
  size_t Read(uint64_t addr, absl::Span<uint8_t> dst) override {
    ++*calls_;
    reads_->push_back({addr, dst.size()});
    return inner_->Read(addr, dst);
  }
  std::shared_ptr<int> calls() const { return calls_; }
  std::shared_ptr<std::vector<std::pair<uint64_t, size_t>>> reads() const {
    return reads_;
  }

 private:
  std::unique_ptr<Memory> inner_;
  std::shared_ptr<int> calls_ = std::make_shared<int>(0);
  std::shared_ptr<std::vector<std::pair<uint64_t, size_t>>> reads_ =
      std::make_shared<std::vector<std::pair<uint64_t, size_t>>>();
};

std::vector<uint8_t> Pattern(size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 7 + i / 256);
  return v;
}

constexpr uint64_t kBase = 0x10000;
constexpr size_t kSize = 3 * 4096 + 100;  // three pages and a partial one

struct Fixture {
  explicit Fixture(uint64_t start = kBase, size_t max_pages = 1024)
      : bytes(Pattern(kSize)) {
    auto counting = std::make_unique<CountingMemory>(start, bytes);
    calls = counting->calls();
    reads = counting->reads();
    cached = CreateCachedMemory(std::move(counting), max_pages);
  }
  std::vector<uint8_t> bytes;
  std::shared_ptr<int> calls;
  std::shared_ptr<std::vector<std::pair<uint64_t, size_t>>> reads;
  std::unique_ptr<Memory> cached;
};

TEST(CachedMemoryTest, OneInnerReadServesThePagesReadAhead) {
  Fixture f;
  uint8_t out[8];
  ASSERT_EQ(f.cached->Read(kBase + 0x10, absl::MakeSpan(out)), 8u);
  EXPECT_EQ(*f.calls, 1);
  // A first miss reads two pages.
  EXPECT_EQ(f.reads->back(), std::make_pair(kBase, size_t{8192}));
  ASSERT_EQ(f.cached->Read(kBase + 0x20, absl::MakeSpan(out)), 8u);
  ASSERT_EQ(f.cached->Read(kBase + 0x1ff8, absl::MakeSpan(out)), 8u);
  EXPECT_EQ(*f.calls, 1);
  EXPECT_EQ(out[0], f.bytes[0x1ff8]);
}

TEST(CachedMemoryTest, ReadSpanningPages) {
  Fixture f;
  uint8_t out[16];
  ASSERT_EQ(f.cached->Read(kBase + 0xff8, absl::MakeSpan(out)), 16u);
  EXPECT_EQ(*f.calls, 1);
  for (size_t i = 0; i < 16; ++i) EXPECT_EQ(out[i], f.bytes[0xff8 + i]);
  std::vector<uint8_t> all(kSize);
  ASSERT_EQ(f.cached->Read(kBase, absl::MakeSpan(all)), kSize);
  EXPECT_EQ(all, f.bytes);
  // Pages 2 and 3 came in one sequential read-ahead.
  EXPECT_EQ(*f.calls, 2);
}

// Walking up a stack page by page doubles the read-ahead each time, up to
// 32 pages, so a deep stack costs a few reads; a jump elsewhere starts over.
TEST(CachedMemoryTest, SequentialMissesDoubleTheReadAhead) {
  std::vector<uint8_t> big(256 * 4096, 7);
  auto counting = std::make_unique<CountingMemory>(kBase, big);
  auto reads = counting->reads();
  std::unique_ptr<Memory> cached = CreateCachedMemory(std::move(counting), 1024);
  uint8_t out[8];
  for (uint64_t a = kBase; a < kBase + big.size(); a += 512) {
    ASSERT_EQ(cached->Read(a, absl::MakeSpan(out)), 8u);
  }
  std::vector<size_t> sizes;
  for (const auto& [addr, size] : *reads) sizes.push_back(size / 4096);
  EXPECT_EQ(sizes, (std::vector<size_t>{2, 4, 8, 16, 32, 32, 32, 32, 32, 32, 32, 32}));
  size_t before = reads->size();
  ASSERT_EQ(cached->Read(0x1000, absl::MakeSpan(out)), 0u);
  ASSERT_GT(reads->size(), before);
  EXPECT_EQ((*reads)[before], std::make_pair(uint64_t{0x1000}, size_t{8192}));
}

TEST(CachedMemoryTest, PartialLastPageIsKeptPartial) {
  Fixture f;
  uint8_t out[20];
  const uint64_t last_page = kBase + 3 * 4096;
  ASSERT_EQ(f.cached->Read(last_page + 90, absl::MakeSpan(out)), 10u);
  EXPECT_EQ(out[9], f.bytes[3 * 4096 + 99]);
  EXPECT_EQ(*f.calls, 1);
  ASSERT_EQ(f.cached->Read(last_page + 90, absl::MakeSpan(out)), 10u);
  EXPECT_EQ(*f.calls, 1);
  // A read crossing from a full page into the partial one stops at the end.
  std::vector<uint8_t> big(200);
  ASSERT_EQ(f.cached->Read(last_page - 50, absl::MakeSpan(big)), 150u);
}

TEST(CachedMemoryTest, UnreadableAddresses) {
  Fixture f;
  uint8_t out[8];
  EXPECT_EQ(f.cached->Read(0x1000, absl::MakeSpan(out)), 0u);
  EXPECT_EQ(f.cached->Read(kBase + kSize, absl::MakeSpan(out)), 0u);
  EXPECT_EQ(f.cached->Read(UINT64_MAX - 3, absl::MakeSpan(out)), 0u);
  EXPECT_EQ(f.cached->Read(kBase, absl::Span<uint8_t>()), 0u);
}

TEST(CachedMemoryTest, InnerRegionStartingMidPage) {
  // A snapshot's stack copy rarely starts on a page boundary: the page read
  // from the page start sees nothing, yet the bytes are there.
  Fixture f(kBase + 0x10);
  uint8_t out[8];
  ASSERT_EQ(f.cached->Read(kBase + 0x10, absl::MakeSpan(out)), 8u);
  EXPECT_EQ(out[0], f.bytes[0]);
  ASSERT_EQ(f.cached->Read(kBase + 0x1000, absl::MakeSpan(out)), 8u);
  EXPECT_EQ(out[0], f.bytes[0x1000 - 0x10]);
}

TEST(CachedMemoryTest, BoundedNumberOfPages) {
  Fixture f(kBase, /*max_pages=*/2);
  uint8_t out[8];
  for (int page : {0, 1}) {
    ASSERT_EQ(f.cached->Read(kBase + page * 4096, absl::MakeSpan(out)), 8u);
  }
  EXPECT_EQ(*f.calls, 1);
  ASSERT_EQ(f.cached->Read(kBase + 2 * 4096, absl::MakeSpan(out)), 8u);
  EXPECT_EQ(*f.calls, 2);
  // The cache was emptied to make room, so page 0 is read again.
  ASSERT_EQ(f.cached->Read(kBase, absl::MakeSpan(out)), 8u);
  EXPECT_EQ(*f.calls, 3);
}

TEST(CachedMemoryTest, RandomReadsMatchTheInnerMemory) {
  Fixture f(kBase + 0x123, /*max_pages=*/3);
  std::unique_ptr<Memory> plain = CreateBufferMemory(kBase + 0x123, f.bytes);
  std::mt19937_64 rng(42);
  for (int i = 0; i < 2000; ++i) {
    uint64_t addr = kBase - 0x200 + rng() % (kSize + 0x400);
    std::vector<uint8_t> a(rng() % 9000), b(a.size());
    ASSERT_EQ(f.cached->Read(addr, absl::MakeSpan(a)),
              plain->Read(addr, absl::MakeSpan(b)))
        << std::hex << addr << " " << a.size();
    ASSERT_EQ(a, b);
  }
}

}  // namespace
}  // namespace unwindd::memory
