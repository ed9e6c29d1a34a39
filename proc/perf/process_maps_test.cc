#include "proc/perf/process_maps.h"

#include <vector>

#include "gtest/gtest.h"

namespace unwindd::proc::perf {
namespace {

MmapEvent Map(uint32_t pid, uint64_t start, uint64_t len, uint64_t pgoff,
              absl::string_view file, uint32_t prot = kProtRead | kProtExec) {
  MmapEvent m;
  m.pid = m.tid = pid;
  m.start = start;
  m.len = len;
  m.pgoff = pgoff;
  m.filename = file;
  m.prot = prot;
  m.is_mmap2 = true;
  return m;
}

// start, end, pgoff, path of every mapping.
struct Row {
  uint64_t start, end, pgoff;
  std::string path;
  bool operator==(const Row& o) const {
    return start == o.start && end == o.end && pgoff == o.pgoff && path == o.path;
  }
};
std::ostream& operator<<(std::ostream& os, const Row& r) {
  return os << std::hex << r.start << "-" << r.end << "@" << r.pgoff << " " << r.path;
}
std::vector<Row> Rows(const ProcessTable* t) {
  std::vector<Row> out;
  if (t == nullptr) return out;
  for (const auto& [s, m] : t->mappings) out.push_back({m.start, m.end, m.pgoff, m.path()});
  return out;
}

TEST(ProcessMaps, OverlapsSplitAndReplaceLikeTheKernel) {
  ProcessMaps maps;
  maps.Mmap(Map(1, 0x1000, 0x5000, 0, "/a"), 1);
  maps.Mmap(Map(1, 0x8000, 0x1000, 0, "/c"), 2);
  // Covers the middle of /a: /a is split around it, pgoff kept right.
  maps.Mmap(Map(1, 0x2000, 0x2000, 0x100000, "/b"), 3);
  EXPECT_EQ(Rows(maps.Find(1)),
            (std::vector<Row>{{0x1000, 0x2000, 0, "/a"},
                              {0x2000, 0x4000, 0x100000, "/b"},
                              {0x4000, 0x6000, 0x3000, "/a"},
                              {0x8000, 0x9000, 0, "/c"}}));
  // Covers everything: one mapping left.
  maps.Mmap(Map(1, 0x0, 0x10000, 0, "/d"), 4);
  EXPECT_EQ(Rows(maps.Find(1)), (std::vector<Row>{{0, 0x10000, 0, "/d"}}));
  // Exactly the same range again: replaced.
  maps.Mmap(Map(1, 0x0, 0x10000, 0x5000, "/e"), 5);
  EXPECT_EQ(Rows(maps.Find(1)), (std::vector<Row>{{0, 0x10000, 0x5000, "/e"}}));
  // Overlapping the start of one and the end of another.
  maps.Mmap(Map(1, 0x10000, 0x1000, 0, "/f"), 6);
  maps.Mmap(Map(1, 0xf000, 0x1800, 0, "/g"), 7);
  EXPECT_EQ(Rows(maps.Find(1)), (std::vector<Row>{{0, 0xf000, 0x5000, "/e"},
                                                   {0xf000, 0x10800, 0, "/g"},
                                                   {0x10800, 0x11000, 0x800, "/f"}}));
}

TEST(ProcessMaps, GenerationChangesWithTheMappingsOnly) {
  ProcessMaps maps;
  maps.Mmap(Map(1, 0x1000, 0x1000, 0, "/a"), 1);
  const uint64_t g1 = maps.Find(1)->generation;
  CommEvent rename;
  rename.pid = rename.tid = 1;
  rename.comm = "new-name";
  maps.Comm(rename);
  EXPECT_EQ(maps.Find(1)->generation, g1);
  EXPECT_EQ(maps.ThreadComm(1), "new-name");
  maps.Mmap(Map(1, 0x3000, 0x1000, 0, "/b"), 2);
  EXPECT_NE(maps.Find(1)->generation, g1);
}

TEST(ProcessMaps, ForkCopiesThreadsShareExecDropsExitMarks) {
  ProcessMaps maps;
  CommEvent c;
  c.pid = c.tid = 1;
  c.comm = "parent";
  maps.Comm(c);
  maps.Mmap(Map(1, 0x1000, 0x1000, 0, "/a"), 1);
  TaskEvent f;
  f.pid = 2;
  f.ppid = 1;
  f.tid = 2;
  f.ptid = 1;
  maps.Fork(f);
  EXPECT_EQ(Rows(maps.Find(2)), Rows(maps.Find(1)));
  EXPECT_EQ(maps.ThreadComm(2), "parent");
  EXPECT_NE(maps.Find(2)->generation, maps.Find(1)->generation);
  // The child's later mappings are its own.
  maps.Mmap(Map(2, 0x5000, 0x1000, 0, "/child"), 2);
  EXPECT_EQ(maps.Find(1)->mappings.size(), 1u);
  EXPECT_EQ(maps.Find(2)->mappings.size(), 2u);
  // A new thread of 1: same table, the creator's name.
  TaskEvent t;
  t.pid = 1;
  t.ppid = 1;
  t.tid = 7;
  t.ptid = 1;
  maps.Fork(t);
  EXPECT_EQ(maps.processes(), 2u);
  EXPECT_EQ(maps.ThreadComm(7), "parent");
  // exec in 2: empty table, new name.
  CommEvent e;
  e.pid = e.tid = 2;
  e.exec = true;
  e.comm = "exec'd";
  maps.Comm(e);
  EXPECT_TRUE(maps.Find(2)->mappings.empty());
  EXPECT_EQ(maps.Find(2)->comm, "exec'd");
  // A thread's exit leaves the process; the main thread's marks it.
  TaskEvent x;
  x.pid = 1;
  x.tid = 7;
  maps.Exit(x);
  EXPECT_FALSE(maps.Find(1)->exited);
  x.tid = 1;
  maps.Exit(x);
  EXPECT_TRUE(maps.Find(1)->exited);
  // pid 2 reused by a new fork: its old table goes.
  maps.Fork(f);
  EXPECT_EQ(Rows(maps.Find(2)), Rows(maps.Find(1)));
}

TEST(ProcessMaps, ApplyDispatchesEvents) {
  ProcessMaps maps;
  Event e;
  e.type = kRecordMmap2;
  e.mmap = Map(3, 0x1000, 0x1000, 0, "/x");
  e.mmap.ino = 42;
  e.mmap.build_id = Bytes(absl::MakeConstSpan(reinterpret_cast<const uint8_t*>("\x01\x02"), 2));
  e.id.time = 99;
  maps.Apply(e);
  const ProcessTable* t = maps.Find(3);
  ASSERT_NE(t, nullptr);
  const PerfMapping& m = t->mappings.begin()->second;
  EXPECT_EQ(m.ino, 42u);
  EXPECT_EQ(m.build_id, "0102");
  EXPECT_EQ(m.time, 99u);
  e.type = kRecordSample;  // ignored
  e.mmap = Map(3, 0x9000, 0x1000, 0, "/y");
  maps.Apply(e);
  EXPECT_EQ(maps.Find(3)->mappings.size(), 1u);
}

TEST(ProcessMaps, IgnoresKernelAndEmptyMappings) {
  ProcessMaps maps;
  maps.Mmap(Map(0xffffffffu, 0xffffffff81000000ULL, 0x1000000, 0, "[kernel.kallsyms]"), 1);
  EXPECT_EQ(maps.processes(), 0u);
  maps.Mmap(Map(1, 0x1000, 0, 0, "/a"), 1);
  maps.Mmap(Map(1, ~uint64_t{0} - 10, 0x1000, 0, "/wraps"), 1);
  EXPECT_TRUE(maps.Find(1) == nullptr || maps.Find(1)->mappings.empty());
  EXPECT_EQ(maps.warnings().count(), 2u);
}

TEST(ProcessMaps, BoundedMappingsAndProcesses) {
  ProcessMaps maps(/*max_mappings=*/3, /*max_processes=*/2);
  for (int i = 0; i < 5; ++i) maps.Mmap(Map(1, 0x1000 * (2 * i + 1), 0x1000, 0, "/a"), i);
  EXPECT_EQ(maps.Find(1)->mappings.size(), 3u);
  EXPECT_EQ(maps.warnings().count(), 2u);
  maps.Mmap(Map(2, 0x1000, 0x1000, 0, "/b"), 1);
  // A third process: refused while both others run...
  maps.Mmap(Map(3, 0x1000, 0x1000, 0, "/c"), 1);
  EXPECT_EQ(maps.Find(3), nullptr);
  // ...and takes the place of one that has exited.
  TaskEvent x;
  x.pid = x.tid = 1;
  maps.Exit(x);
  maps.Mmap(Map(3, 0x1000, 0x1000, 0, "/c"), 1);
  EXPECT_NE(maps.Find(3), nullptr);
  EXPECT_EQ(maps.Find(1), nullptr);
  EXPECT_EQ(maps.processes(), 2u);
}

}  // namespace
}  // namespace unwindd::proc::perf
