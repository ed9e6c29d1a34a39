// Which frames make the CLI look for announced JIT code: those that ran
// code no file holds.
#include "service/cli/jit_code.h"

#include <string>

#include "gtest/gtest.h"
#include "unwinder/testing/fake_target.h"

namespace unwindd::service {
namespace {

proc::Mapping Map(uint64_t start, uint64_t end, std::string path, bool deleted = false) {
  proc::Mapping m;
  m.start = start;
  m.end = end;
  m.read = m.exec = true;
  m.inode = path.empty() || path[0] == '[' ? 0 : 42;
  m.path = std::move(path);
  m.deleted = deleted;
  return m;
}

unwinder::ProcessStacks StackAt(std::vector<uint64_t> pcs) {
  unwinder::ProcessStacks s;
  unwinder::ThreadStack t;
  for (uint64_t pc : pcs) t.frames.push_back(unwinder::Frame{.pc = pc});
  s.threads.push_back(t);
  return s;
}

TEST(RanUnfiledCodeTest, OnlyFramesOutsideEveryFileCount) {
  unwinder::testing::FakeTarget target(arch::Arch::kX86_64);
  target.AddMapping(Map(0x1000, 0x2000, "/usr/lib/libc.so.6"));
  target.AddMapping(Map(0x2000, 0x3000, ""));  // anonymous: a JIT's code
  target.AddMapping(Map(0x3000, 0x4000, "/memfd:jit"));
  target.AddMapping(Map(0x4000, 0x5000, "/tmp/gone.so", /*deleted=*/true));
  target.AddMapping(Map(0x5000, 0x6000, "[vdso]"));
  target.AddMapping(Map(0x6000, 0x7000, "/dev/shm/code"));
  target.AddMapping(Map(0x7000, 0x8000, "[anon:v8]"));
  target.AddMapping(Map(0x9000, 0xa000, "/usr/bin/prog"));

  EXPECT_FALSE(RanUnfiledCode(StackAt({}), target));
  EXPECT_FALSE(RanUnfiledCode(StackAt({0x1000, 0x1fff, 0x5800, 0x9000}), target));
  EXPECT_TRUE(RanUnfiledCode(StackAt({0x1000, 0x2800}), target));
  EXPECT_TRUE(RanUnfiledCode(StackAt({0x3000}), target));
  EXPECT_TRUE(RanUnfiledCode(StackAt({0x4abc}), target));
  EXPECT_TRUE(RanUnfiledCode(StackAt({0x6000}), target));
  EXPECT_TRUE(RanUnfiledCode(StackAt({0x7000}), target));
  // In no mapping at all (between two, below all, above all).
  EXPECT_TRUE(RanUnfiledCode(StackAt({0x8800}), target));
  EXPECT_TRUE(RanUnfiledCode(StackAt({0x10}), target));
  EXPECT_TRUE(RanUnfiledCode(StackAt({0xa000}), target));
  // A return address is its call's: one that ends libc's mapping is
  // libc's, not the anonymous mapping's after it; an exact PC there is not.
  unwinder::ProcessStacks ret = StackAt({0x1000, 0x2000});
  ret.threads[0].frames[1].method = unwinder::Method::kEhFrame;
  EXPECT_FALSE(RanUnfiledCode(ret, target));
  ret.threads[0].frames[1].method = unwinder::Method::kSignal;
  EXPECT_TRUE(RanUnfiledCode(ret, target));
  ret = StackAt({0x1000, 0x2001});
  ret.threads[0].frames[1].method = unwinder::Method::kFramePointer;
  EXPECT_TRUE(RanUnfiledCode(ret, target));
  // Any thread's frame.
  unwinder::ProcessStacks two = StackAt({0x1000});
  two.threads.push_back(StackAt({0x9000, 0x2000}).threads[0]);
  EXPECT_TRUE(RanUnfiledCode(two, target));
  // Frames in the mapping of the frame before.
  EXPECT_FALSE(RanUnfiledCode(StackAt({0x9000, 0x9100, 0x9f00, 0x1000, 0x1800}), target));
}

// A core's mappings may overlap: a frame is the mapping's that starts last
// at or below it, even right after a frame in the one that starts before.
TEST(RanUnfiledCodeTest, OverlappingMappingsAnswerAsTheSearchDoes) {
  unwinder::testing::FakeTarget target(arch::Arch::kX86_64);
  target.AddMapping(Map(0x1000, 0x3000, "/usr/lib/libc.so.6"));
  target.AddMapping(Map(0x2000, 0x2800, ""));
  EXPECT_FALSE(RanUnfiledCode(StackAt({0x1100, 0x1200}), target));
  EXPECT_TRUE(RanUnfiledCode(StackAt({0x1100, 0x2100}), target));
  // Past the anonymous one, libc's again (the search finds the anonymous
  // one, which does not hold it: unfiled, as before).
  EXPECT_TRUE(RanUnfiledCode(StackAt({0x1100, 0x2900}), target));
}

}  // namespace
}  // namespace unwindd::service
