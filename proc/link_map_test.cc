#include "proc/link_map.h"

#include <elf.h>

#include <string>

#include "gtest/gtest.h"
#include "memory/testing/map_memory.h"

namespace unwindd::proc {
namespace {

using memory::testing::MapMemory;

constexpr uint64_t kRDebug = 0x10000;

void PutString(MapMemory& m, uint64_t addr, const std::string& s) {
  std::vector<uint8_t> b(s.begin(), s.end());
  b.push_back(0);
  m.Put(addr, b);
}

// r_debug{version 1, r_map} and a list of link_map{l_addr, l_name, l_ld,
// l_next, l_prev} at 0x20000 + 0x100 * i.
void PutList(MapMemory& m,
             const std::vector<std::pair<uint64_t, std::string>>& objs) {
  m.PutLe(kRDebug, 1, 4);
  m.PutLe(kRDebug + 4, 0, 4);
  m.PutLe(kRDebug + 8, objs.empty() ? 0 : 0x20000, 8);
  for (size_t i = 0; i < objs.size(); ++i) {
    const uint64_t lm = 0x20000 + 0x100 * i;
    m.PutLe(lm, objs[i].first, 8);
    m.PutLe(lm + 8, 0x30000 + 0x100 * i, 8);
    PutString(m, 0x30000 + 0x100 * i, objs[i].second);
    m.PutLe(lm + 16, 0x40000 + i, 8);
    m.PutLe(lm + 24, i + 1 < objs.size() ? lm + 0x100 : 0, 8);
    m.PutLe(lm + 32, i ? lm - 0x100 : 0, 8);
  }
}

TEST(LinkMapTest, ReadsTheList) {
  MapMemory m;
  PutList(m, {{0, ""},
              {0x7f0000000000, "/lib/x86_64-linux-gnu/libc.so.6"},
              {0x7f1000000000, "/lib64/ld-linux-x86-64.so.2"}});
  absl::StatusOr<std::vector<LinkMapEntry>> l = ReadLinkMap(m, kRDebug, 8);
  ASSERT_TRUE(l.ok()) << l.status();
  ASSERT_EQ(l->size(), 3u);
  EXPECT_EQ((*l)[0].name, "");
  EXPECT_EQ((*l)[1].l_addr, 0x7f0000000000u);
  EXPECT_EQ((*l)[1].name, "/lib/x86_64-linux-gnu/libc.so.6");
  EXPECT_EQ((*l)[2].l_ld, 0x40002u);
}

TEST(LinkMapTest, LoopIsDataLoss) {
  MapMemory m;
  PutList(m, {{0, ""}, {0x1000, "/a"}});
  m.PutLe(0x20100 + 24, 0x20000, 8);  // second entry's l_next -> first
  EXPECT_TRUE(absl::IsDataLoss(ReadLinkMap(m, kRDebug, 8).status()));
}

TEST(LinkMapTest, BadVersionAndUnreadableRDebug) {
  MapMemory m;
  PutList(m, {{0, ""}});
  m.PutLe(kRDebug, 7, 4);
  EXPECT_TRUE(absl::IsDataLoss(ReadLinkMap(m, kRDebug, 8).status()));
  EXPECT_TRUE(absl::IsOutOfRange(ReadLinkMap(m, 0x99999, 8).status()));
}

TEST(LinkMapTest, UnreadableEntryEndsTheListEarly) {
  MapMemory m;
  PutList(m, {{0, ""}, {0x1000, "/a"}});
  m.PutLe(0x20100 + 24, 0xdead0000, 8);  // l_next into nothing
  absl::StatusOr<std::vector<LinkMapEntry>> l = ReadLinkMap(m, kRDebug, 8);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->size(), 2u);
}

TEST(LinkMapTest, UnterminatedNameIsLeftEmpty) {
  MapMemory m;
  PutList(m, {{0, ""}, {0x1000, "/a"}});
  m.Put(0x30100, std::vector<uint8_t>(kMaxLinkMapName + 10, 'x'));
  absl::StatusOr<std::vector<LinkMapEntry>> l = ReadLinkMap(m, kRDebug, 8);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ((*l)[1].name, "");
}

TEST(LinkMapTest, FindRDebugFromDtDebug) {
  MapMemory m;
  ElfImage exe;
  exe.elf_class = ELFCLASS64;
  exe.load_bias = 0x555500000000;
  exe.phdrs.push_back({PT_DYNAMIC, 6, 0x2000, 0x3000, 0x40, 0x40, 8});
  const uint64_t dyn = exe.load_bias + 0x3000;
  m.PutLe(dyn, DT_NEEDED, 8);
  m.PutLe(dyn + 8, 1, 8);
  m.PutLe(dyn + 16, DT_DEBUG, 8);
  m.PutLe(dyn + 24, kRDebug, 8);
  m.PutLe(dyn + 32, DT_NULL, 8);
  m.PutLe(dyn + 40, 0, 8);
  m.PutLe(dyn + 48, 0, 16);
  absl::StatusOr<uint64_t> r = FindRDebug(m, exe);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, kRDebug);
  m.PutLe(dyn + 24, 0, 8);
  EXPECT_TRUE(absl::IsNotFound(FindRDebug(m, exe).status()));
  exe.phdrs.clear();
  EXPECT_TRUE(absl::IsNotFound(FindRDebug(m, exe).status()));
}

}  // namespace
}  // namespace unwindd::proc
