#include "proc/jit/perf_map.h"

#include <unistd.h>

#include <fstream>

#include "gtest/gtest.h"

namespace unwindd::proc::jit {
namespace {

TEST(PerfMapTest, ParsesHexWithAndWithout0xAndNamesWithSpaces) {
  const PerfMap m = PerfMap::Parse(
      "7f0000001000 40 LazyCompile:*rec /tmp/work.js:2\n"
      "0x7f0000002000 0x20 JS:~leaf work.js:1\r\n"
      "3000\t10\tstub\n");
  ASSERT_EQ(m.entries().size(), 3u);
  EXPECT_EQ(m.skipped_lines(), 0u);
  const PerfMapEntry* e = m.Find(0x7f000000103f);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->name, "LazyCompile:*rec /tmp/work.js:2");
  EXPECT_EQ(e->start, 0x7f0000001000u);
  EXPECT_EQ(m.Find(0x7f0000001040), nullptr);  // one past its end
  ASSERT_NE(m.Find(0x7f0000002000), nullptr);
  EXPECT_EQ(m.Find(0x7f0000002000)->name, "JS:~leaf work.js:1");  // "\r" dropped
  ASSERT_NE(m.Find(0x300f), nullptr);
  EXPECT_EQ(m.Find(0x300f)->name, "stub");
  EXPECT_EQ(m.Find(0x2fff), nullptr);
}

TEST(PerfMapTest, SkipsWhatDoesNotParseAndAnUnfinishedLastLine) {
  const PerfMap m = PerfMap::Parse(
      "zz 10 bad start\n"
      "1000 0 empty code\n"
      "ffffffffffffff00 200 wraps\n"
      "2000 10\n"                // no name
      "12345678901234567 1 x\n"  // 17 digits
      "4000 10 good\n"
      "5000 10 still being wri");
  ASSERT_EQ(m.entries().size(), 1u);
  EXPECT_EQ(m.entries()[0].name, "good");
  EXPECT_EQ(m.skipped_lines(), 6u);
  EXPECT_EQ(m.Find(0x5000), nullptr);
}

TEST(PerfMapTest, ALaterLineReplacesWhatItCovers) {
  // Code at 0x1000..0x1100 collected, and new code put over its middle.
  const PerfMap m = PerfMap::Parse(
      "1000 100 old\n"
      "1040 40 new\n"
      "1000 10 newer\n");
  ASSERT_EQ(m.entries().size(), 4u);
  EXPECT_EQ(m.Find(0x1000)->name, "newer");
  EXPECT_EQ(m.Find(0x1010)->name, "old");
  EXPECT_EQ(m.Find(0x1040)->name, "new");
  EXPECT_EQ(m.Find(0x107f)->name, "new");
  EXPECT_EQ(m.Find(0x1080)->name, "old");
  EXPECT_EQ(m.Find(0x10ff)->name, "old");
  EXPECT_EQ(m.Find(0x1100), nullptr);
  for (size_t i = 1; i < m.entries().size(); ++i) {
    EXPECT_LE(m.entries()[i - 1].end, m.entries()[i].start);
  }
}

TEST(PerfMapTest, CutsLongNames) {
  const PerfMap m = PerfMap::Parse("1000 10 " + std::string(10000, 'n') + "\n");
  ASSERT_EQ(m.entries().size(), 1u);
  EXPECT_EQ(m.entries()[0].name.size(), kMaxPerfMapName);
}

TEST(PerfMapTest, LoadsAFileAndSaysWhenThereIsNone) {
  const std::string path = ::testing::TempDir() + "/perf-test.map";
  std::ofstream(path) << "1000 10 a\n2000 10 b\n";
  absl::StatusOr<PerfMap> m = PerfMap::Load(path, kMaxPerfMapBytes);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->entries().size(), 2u);
  // Bounded: only the first line's bytes.
  absl::StatusOr<PerfMap> cut = PerfMap::Load(path, 10);
  ASSERT_TRUE(cut.ok());
  EXPECT_EQ(cut->entries().size(), 1u);
  EXPECT_EQ(PerfMap::Load(path + ".none", kMaxPerfMapBytes).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_FALSE(PerfMap::Load("/proc/self", kMaxPerfMapBytes).ok());  // a directory
}

TEST(PerfMapTest, PerfMapsReadsEachProcesssMapOnce) {
  const std::string dir = ::testing::TempDir();
  std::ofstream(dir + "/perf-7.map") << "1000 10 seven\n";
  int reads = 0;
  PerfMaps maps([&](pid_t pid) {
    ++reads;
    return dir + "/perf-" + std::to_string(pid) + ".map";
  });
  const PerfMap* seven = maps.Get(7);
  ASSERT_NE(seven, nullptr);
  EXPECT_EQ(seven->Find(0x1000)->name, "seven");
  EXPECT_EQ(maps.Get(7), seven);
  EXPECT_EQ(maps.Get(8), nullptr);  // no file
  EXPECT_EQ(maps.Get(8), nullptr);
  EXPECT_EQ(reads, 2);
  // Bounded by processes.
  PerfMaps one([&](pid_t) { return dir + "/perf-7.map"; }, /*max_processes=*/1);
  EXPECT_NE(one.Get(1), nullptr);
  EXPECT_EQ(one.Get(2), nullptr);
}

TEST(PerfMapTest, Paths) {
  EXPECT_EQ(PerfMapPath(42), "/tmp/perf-42.map");
  EXPECT_EQ(PerfMapPid("/tmp/perf-42.map"), 42);
  EXPECT_EQ(PerfMapPid("/tmp/perf-x.map"), 0);
  EXPECT_EQ(PerfMapPid("/usr/bin/node"), 0);
  Mapping m;
  m.exec = true;
  for (const char* path : {"", "//anon", "[heap]", "[stack]", "/dev/zero (deleted)",
                           "/anon_hugepage", "/SYSV00000000"}) {
    m.path = path;
    EXPECT_TRUE(NamedByPerfMap(m)) << path;
  }
  for (const char* path : {"/usr/bin/node", "[vdso]", "/tmp/jitted-1-2.so"}) {
    m.path = path;
    EXPECT_FALSE(NamedByPerfMap(m)) << path;
  }
  m.path = "//anon";
  m.exec = false;
  EXPECT_FALSE(NamedByPerfMap(m));
  // This process, in whatever namespace the test runs: its own PID there.
  const std::string live = LivePerfMapPath(getpid());
  EXPECT_EQ(live.rfind("/proc/", 0), 0u);
  EXPECT_NE(live.find("/root/tmp/perf-"), std::string::npos);
}

}  // namespace
}  // namespace unwindd::proc::jit
