#include "testdata/aarch64/live/snapshot_text.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gtest/gtest.h"

namespace unwindd::testdata::live {
namespace {

Capture Sample() {
  Capture c;
  c.pid = 77;
  c.pac_target = arch::PacMask{0x7f000000000000, 0x7f000000000000};
  proc::Mapping m;
  m.start = 0xaaaad0000000;
  m.end = 0xaaaad0001000;
  m.read = m.exec = true;
  m.inode = 42;
  m.path = "/fixtures/demo";
  c.mappings.push_back(m);
  proc::Mapping anon;
  anon.start = 0xffffe0000000;
  anon.end = 0xffffe0021000;
  anon.read = anon.write = true;
  c.mappings.push_back(anon);
  c.vdso_address = 0xffff9a5f2000;
  c.vdso.assign(300, 0);
  c.vdso[0] = 0x7f;
  c.vdso[299] = 0x46;
  CapturedThread t;
  t.tid = 78;
  t.registers.Set(30, 0xaaaad00009f4);
  t.registers.Set(31, 0xffffe0020000);
  t.registers.Set(32, 0xaaaad0000010);
  t.stack_address = 0xffffe0020000;
  for (int i = 0; i < 200; ++i) t.stack.push_back(static_cast<uint8_t>(i));
  c.threads.push_back(t);
  return c;
}

TEST(SnapshotTextTest, RoundTripsThroughAConsole) {
  const Capture c = Sample();
  // A serial console adds "\r" and other lines around the block.
  std::string console = absl::StrCat(
      "[    1.0] kernel says hi\r\n",
      absl::StrReplaceAll(FormatCapture(c), {{"\n", "\r\n"}}), "UWD other\r\n");
  absl::StatusOr<std::vector<Capture>> parsed = ParseCaptures(console);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->size(), 1u);
  const Capture& p = (*parsed)[0];
  EXPECT_EQ(p.pid, 77);
  EXPECT_EQ(p.pac_target, c.pac_target);
  EXPECT_FALSE(p.pac_raw.has_value());
  ASSERT_EQ(p.mappings.size(), 2u);
  EXPECT_EQ(p.mappings[0].path, "/fixtures/demo");
  EXPECT_EQ(p.mappings[0].inode, 42u);
  EXPECT_TRUE(p.mappings[0].exec);
  EXPECT_FALSE(p.mappings[0].write);
  EXPECT_EQ(p.mappings[1].path, "");
  EXPECT_TRUE(p.mappings[1].write);
  EXPECT_EQ(p.vdso_address, c.vdso_address);
  EXPECT_EQ(p.vdso, c.vdso);
  ASSERT_EQ(p.threads.size(), 1u);
  EXPECT_EQ(p.threads[0].tid, 78);
  EXPECT_EQ(p.threads[0].registers.Get(30), 0xaaaad00009f4u);
  EXPECT_EQ(p.threads[0].registers.pc(), 0xaaaad0000010u);
  EXPECT_FALSE(p.threads[0].registers.Valid(0));
  EXPECT_EQ(p.threads[0].stack, c.threads[0].stack);
  EXPECT_EQ(p.threads[0].stack_address, c.threads[0].stack_address);
}

TEST(SnapshotTextTest, RejectsBrokenBlocks) {
  const std::string good = FormatCapture(Sample());
  // Unterminated.
  EXPECT_FALSE(ParseCaptures(good.substr(0, good.size() - 13)).ok());
  // A gap in the stack bytes.
  std::string gap = absl::StrReplaceAll(good, {{"UWD-SNAP bytes 0xffffe0020040", "UWD-SNAP bytes 0xffffe0020050"}});
  EXPECT_FALSE(ParseCaptures(gap).ok());
  // A huge zero run.
  std::string huge = absl::StrReplaceAll(good, {{"UWD-SNAP thread 78 0xffffe0020000\n", "UWD-SNAP thread 78 0xffffe0020000\nUWD-SNAP zero 0xffffe0020000 99999999999\n"}});
  EXPECT_FALSE(ParseCaptures(huge).ok());
  // Bad hex, a register out of range, a line outside a block.
  EXPECT_FALSE(ParseCaptures(absl::StrReplaceAll(good, {{"reg 30 0x", "reg 30 0xz"}})).ok());
  EXPECT_FALSE(ParseCaptures(absl::StrReplaceAll(good, {{"reg 30 ", "reg 300 "}})).ok());
  EXPECT_FALSE(ParseCaptures("UWD-SNAP reg 1 0x1\n").ok());
}

}  // namespace
}  // namespace unwindd::testdata::live
