#include "unwinder/step_cache.h"

#include "gtest/gtest.h"

namespace unwindd::unwinder {
namespace {

constexpr arch::FrameAddress RA(uint64_t a) { return arch::FrameAddress::ReturnAddress(a); }
constexpr arch::FrameAddress IP(uint64_t a) {
  return arch::FrameAddress::InstructionPointer(a);
}

TEST(StepCacheTest, EmptyUntilFirstPut) {
  StepCache cache;
  EXPECT_EQ(cache.Find(RowKey(RA(0x401000), 1)), nullptr);
  EXPECT_EQ(cache.bytes(), 0u);
  // An empty slot holds address 0: it must not look like an entry for 0.
  cache.Put(RowKey(RA(0x401000), 1), 2, Method::kSframe, CompactRow());
  EXPECT_EQ(cache.Find(RowKey(RA(0), 1)), nullptr);
  EXPECT_EQ(cache.bytes(), StepCache::kSmallEntries * sizeof(StepCache::Entry));
}

// Small for a one-shot unwind; full-sized, once, for an address space that
// keeps taking new PCs (a profiler's), and entries put after that stay.
TEST(StepCacheTest, GrowsOnceToItsFullSize) {
  StepCache cache;
  for (uint64_t pc = 0; pc < StepCache::kSmallEntries / 2 - 1; ++pc) {
    cache.Put(RowKey(RA(0x401000 + 16 * pc), 1), 0, Method::kEhFrame, CompactRow());
  }
  EXPECT_EQ(cache.bytes(), StepCache::kSmallEntries * sizeof(StepCache::Entry));
  cache.Put(RowKey(RA(0x500000), 1), 3, Method::kEhFrame, CompactRow());
  EXPECT_EQ(cache.bytes(), StepCache::kEntries * sizeof(StepCache::Entry));
  ASSERT_NE(cache.Find(RowKey(RA(0x500000), 1)), nullptr);
  int found = 0;
  for (uint64_t pc = 0; pc < 200; ++pc) {
    cache.Put(RowKey(RA(0x600000 + 16 * pc), 1), 1, Method::kEhFrame, CompactRow());
  }
  for (uint64_t pc = 0; pc < 200; ++pc) found += cache.Find(RowKey(RA(0x600000 + 16 * pc), 1)) != nullptr;
  EXPECT_GT(found, 150);  // 200 keys in 1024 slots: few collide
  EXPECT_EQ(cache.bytes(), StepCache::kEntries * sizeof(StepCache::Entry));
}

TEST(StepCacheTest, KeyedByAddressKindAndPolicy) {
  StepCache cache;
  cache.Put(RowKey(RA(0x401000), 1), 2, Method::kSframe, CompactRow());
  const StepCache::Entry* e = cache.Find(RowKey(RA(0x401000), 1));
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->module, 2);
  EXPECT_EQ(e->method, Method::kSframe);
  EXPECT_EQ(cache.Find(RowKey(IP(0x401000), 1)), nullptr);
  EXPECT_EQ(cache.Find(RowKey(RA(0x401000), 2)), nullptr);
  EXPECT_EQ(cache.Find(RowKey(RA(0x401001), 1)), nullptr);
}

TEST(StepCacheTest, ACollisionReplacesTheOlderEntry) {
  StepCache cache;
  // Find two PCs that share a slot.
  uint64_t a = 0x401000, b = 0;
  cache.Put(RowKey(RA(a), 1), 0, Method::kEhFrame, CompactRow());
  for (uint64_t pc = a + 1; b == 0; ++pc) {
    cache.Put(RowKey(RA(pc), 1), 1, Method::kEhFrame, CompactRow());
    if (cache.Find(RowKey(RA(a), 1)) == nullptr) b = pc;
  }
  ASSERT_NE(cache.Find(RowKey(RA(b), 1)), nullptr);
  EXPECT_EQ(cache.Find(RowKey(RA(b), 1))->module, 1);
}

}  // namespace
}  // namespace unwindd::unwinder
