#include "unwinder/step_cache.h"

#include "gtest/gtest.h"

namespace unwindd::unwinder {
namespace {

TEST(StepCacheTest, EmptyUntilFirstPut) {
  StepCache cache;
  EXPECT_EQ(cache.Find(0x401000, false, 1), nullptr);
  EXPECT_EQ(cache.bytes(), 0u);
  // An empty slot holds pc 0: it must not look like an entry for pc 0.
  cache.Put(0x401000, false, 1, 2, Method::kSframe, CompactRow());
  EXPECT_EQ(cache.Find(0, false, 1), nullptr);
  EXPECT_EQ(cache.bytes(), StepCache::kEntries * sizeof(StepCache::Entry));
}

TEST(StepCacheTest, KeyedByPcExactAndPolicy) {
  StepCache cache;
  cache.Put(0x401000, false, 1, 2, Method::kSframe, CompactRow());
  const StepCache::Entry* e = cache.Find(0x401000, false, 1);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->module, 2);
  EXPECT_EQ(e->method, Method::kSframe);
  EXPECT_EQ(cache.Find(0x401000, true, 1), nullptr);
  EXPECT_EQ(cache.Find(0x401000, false, 2), nullptr);
  EXPECT_EQ(cache.Find(0x401001, false, 1), nullptr);
}

TEST(StepCacheTest, ACollisionReplacesTheOlderEntry) {
  StepCache cache;
  // Find two PCs that share a slot.
  uint64_t a = 0x401000, b = 0;
  cache.Put(a, false, 1, 0, Method::kEhFrame, CompactRow());
  for (uint64_t pc = a + 1; b == 0; ++pc) {
    cache.Put(pc, false, 1, 1, Method::kEhFrame, CompactRow());
    if (cache.Find(a, false, 1) == nullptr) b = pc;
  }
  ASSERT_NE(cache.Find(b, false, 1), nullptr);
  EXPECT_EQ(cache.Find(b, false, 1)->module, 1);
}

}  // namespace
}  // namespace unwindd::unwinder
