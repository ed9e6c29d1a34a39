#include "proc/jit/jitdump.h"

#include <elf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "proc/jit/jit_code.h"
#include "proc/jit/testing/dump_writer.h"

namespace unwindd::proc::jit {
namespace {

using testing::Cfi;
using testing::Code;
using testing::DumpWriter;

TEST(JitDumpTest, LoadsWithTheirUnwindingInfo) {
  std::vector<uint8_t> eh, hdr;
  Cfi(Code().size(), &eh, &hdr);
  DumpWriter w;
  w.Unwinding(eh, hdr, 1).Load(2000, 0x7f0000001000, Code(), 7, "JS:*fib x.js:1");
  w.Unwinding({}, {}, 0).Load(2100, 0x7f0000002000, Code(), 8, "Builtin:Foo");
  w.Load(2200, 0x7f0000003000, Code(), 9, "no unwinding record");
  absl::StatusOr<JitDump> d = ParseJitDump(w.Close().Bytes());
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->pid, 4242u);
  EXPECT_EQ(d->elf_mach, static_cast<uint32_t>(EM_X86_64));
  EXPECT_TRUE(d->closed);
  EXPECT_FALSE(d->truncated);
  ASSERT_EQ(d->codes.size(), 3u);
  const JitCode& c = d->codes[0];
  EXPECT_EQ(c.time, 2000u);
  EXPECT_EQ(c.code_addr, 0x7f0000001000u);
  EXPECT_EQ(c.code_index, 7u);
  EXPECT_EQ(c.name, "JS:*fib x.js:1");
  EXPECT_EQ(std::vector<uint8_t>(c.code.begin(), c.code.end()), Code());
  EXPECT_EQ(std::vector<uint8_t>(c.eh_frame.begin(), c.eh_frame.end()), eh);
  EXPECT_EQ(std::vector<uint8_t>(c.eh_frame_hdr.begin(), c.eh_frame_hdr.end()), hdr);
  EXPECT_TRUE(d->codes[1].eh_frame.empty());  // mapped_size 0: no CFI
  EXPECT_TRUE(d->codes[2].eh_frame.empty());  // an unwinding record is used once
}

TEST(JitDumpTest, MovesAndOtherEndianness) {
  for (bool swap : {false, true}) {
    DumpWriter w(swap);
    w.Load(10, 0x5000, Code(), 3, "f").Move(20, 0x5000, 0x9000, Code().size(), 3);
    absl::StatusOr<JitDump> d = ParseJitDump(w.Bytes());
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_EQ(d->swapped, swap);
    ASSERT_EQ(d->codes.size(), 2u);
    EXPECT_TRUE(d->codes[0].moved);
    EXPECT_EQ(d->codes[1].code_addr, 0x9000u);
    EXPECT_EQ(d->codes[1].time, 20u);
    EXPECT_EQ(d->codes[1].name, "f");
  }
}

// A running process's dump ends anywhere; what is whole is used.
TEST(JitDumpTest, TruncatedAndHostileDumps) {
  DumpWriter w;
  w.Load(10, 0x5000, Code(), 1, "a").Load(11, 0x6000, Code(), 2, "b");
  std::vector<uint8_t> cut = *w.Bytes();
  cut.resize(cut.size() - 5);
  absl::StatusOr<JitDump> d = ParseJitDump(std::make_shared<const std::vector<uint8_t>>(cut));
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->truncated);
  ASSERT_EQ(d->codes.size(), 1u);
  EXPECT_EQ(d->codes[0].name, "a");
  // Not a jitdump, an unknown version, a header longer than the file.
  EXPECT_TRUE(absl::IsDataLoss(
      ParseJitDump(std::make_shared<const std::vector<uint8_t>>(40, uint8_t{0})).status()));
  EXPECT_FALSE(ParseJitDump(nullptr).ok());
  std::vector<uint8_t> v2 = *w.Bytes();
  v2[4] = 2;
  EXPECT_TRUE(absl::IsUnimplemented(
      ParseJitDump(std::make_shared<const std::vector<uint8_t>>(v2)).status()));
  std::vector<uint8_t> big = *w.Bytes();
  big[8] = 0xff;
  big[9] = 0xff;
  EXPECT_TRUE(absl::IsDataLoss(
      ParseJitDump(std::make_shared<const std::vector<uint8_t>>(big)).status()));
  // A load whose code size runs past its record, or with no name end: skipped.
  DumpWriter bad;
  bad.Load(1, 0x1000, Code(), 1, "x");
  std::vector<uint8_t> b = *bad.Bytes();
  const size_t code_size_at = 40 + 16 + 24;
  b[code_size_at] = 0xff;
  absl::StatusOr<JitDump> s = ParseJitDump(std::make_shared<const std::vector<uint8_t>>(b));
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(s->codes.empty());
  EXPECT_EQ(s->skipped, 1u);
}

TEST(JitDumpTest, DumpPaths) {
  EXPECT_TRUE(IsJitDumpPath("/tmp/jit-1234.dump"));
  EXPECT_TRUE(IsJitDumpPath("jit-7.dump"));
  EXPECT_FALSE(IsJitDumpPath("/tmp/jit-.dump"));
  EXPECT_FALSE(IsJitDumpPath("/tmp/jit-12a.dump"));
  EXPECT_FALSE(IsJitDumpPath("/tmp/xjit-12.dump"));
  EXPECT_FALSE(IsJitDumpPath("/tmp/jit-12.dump.bak"));
}


// What FindJitCode opens is a path the target names: a FIFO there (or
// anything but a regular file) is not waited on nor read, but a warning.
class FifoTarget : public Target {
 public:
  explicit FifoTarget(std::string fifo) : fifo_(std::move(fifo)) {
    Mapping m;
    m.start = 0x10000;
    m.end = 0x11000;
    m.path = "/work/jit-7.dump";
    maps_.push_back(m);
  }
  arch::Arch arch() const override { return arch::Arch::kX86_64; }
  pid_t pid() const override { return 7; }
  std::vector<pid_t> Threads() const override { return {7}; }
  absl::StatusOr<arch::RegisterSet> InitialRegisters(pid_t) override {
    return absl::UnimplementedError("no threads");
  }
  memory::Memory& memory() override { return memory_; }
  const std::vector<Mapping>& mappings() const override { return maps_; }
  std::vector<std::string> FileCandidates(const Mapping&) const override { return {fifo_}; }

 private:
  class NoMemory final : public memory::Memory {
   public:
    size_t Read(uint64_t, absl::Span<uint8_t>) override { return 0; }
  };
  std::string fifo_;
  std::vector<Mapping> maps_;
  NoMemory memory_;
};

TEST(FindJitCode, AFifoIsNotWaitedOn) {
  const std::string fifo = ::testing::TempDir() + "/jit-7.dump";
  unlink(fifo.c_str());
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  FifoTarget target(fifo);
  std::vector<std::string> warnings;
  EXPECT_TRUE(FindJitCode(target, &warnings).empty());
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("not a regular file"), std::string::npos) << warnings[0];
}

}  // namespace
}  // namespace unwindd::proc::jit
