// CoreTarget over synthetic cores: memory from the core first and the
// mapped files second, file lookup with --exe/--sysroot/--path-map and
// build-id checks, threads, signals, compressed cores.
#include "proc/core_target.h"

#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <cstdlib>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "proc/testing/core_builder.h"

namespace unwindd::proc {
namespace {

using testing::CoreBuilder;

// The first page of an ELF file on this machine (header, program headers
// and, for every Debian binary, the build-id note).
std::vector<uint8_t> FirstPage(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::vector<uint8_t> b(4096);
  f.read(reinterpret_cast<char*>(b.data()), b.size());
  return b;
}

std::string DataFile(size_t size) {
  std::vector<uint8_t> b(size);
  for (size_t i = 0; i < size; ++i) b[i] = static_cast<uint8_t>(i >> 12);
  return testing::WriteTempFile(b);
}

TEST(CoreTargetTest, MemoryIsTheCoreThenTheMappedFile) {
  const std::string lib = DataFile(0x4000);  // byte = page number
  CoreBuilder b;
  b.AddThread(101, 0x10010, 0x7ffd0100);
  b.AddThread(100, 0x10020, 0x7ffd0200, 3);
  b.AddSigInfo(3, 0, 55);
  b.SetPrpsInfo(100, "prog");
  b.SetNtFile({{0x10000, 0x13000, 0x1000, lib}});
  // Only the first page of the mapping was dumped.
  b.AddSegment(0x10000, std::vector<uint8_t>(0x1000, 0xcc), 0x3000, 5);
  absl::StatusOr<std::unique_ptr<CoreTarget>> t =
      OpenCore(testing::WriteTempFile(b.Build()), {});
  ASSERT_TRUE(t.ok()) << t.status();
  memory::Memory& m = (*t)->memory();
  EXPECT_EQ(*m.ReadU8(0x10000), 0xcc);  // the core's own bytes win
  EXPECT_EQ(*m.ReadU8(0x11000), 2);     // file offset 0x1000 + 0x1000
  EXPECT_EQ(*m.ReadU8(0x12fff), 3);
  EXPECT_FALSE(m.ReadU8(0x13000).ok());

  EXPECT_EQ((*t)->pid(), 100);
  EXPECT_EQ((*t)->Threads(), (std::vector<pid_t>{100, 101}));  // main first
  absl::StatusOr<arch::RegisterSet> r = (*t)->InitialRegisters(101);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->pc(), 0x10010u);
  EXPECT_TRUE(absl::IsNotFound((*t)->InitialRegisters(999).status()));
  std::optional<SignalInfo> sig = (*t)->ThreadSignal(100);
  ASSERT_TRUE(sig.has_value());
  EXPECT_EQ(sig->number, 3);
  EXPECT_EQ(sig->sender_pid, 55);
  EXPECT_FALSE((*t)->ThreadSignal(101).has_value());

  ASSERT_EQ((*t)->report().files.size(), 1u);
  EXPECT_EQ((*t)->report().files[0].state, CoreFileStatus::State::kFound);
  EXPECT_EQ((*t)->FileCandidates((*t)->mappings()[0]),
            std::vector<std::string>{lib});
}

TEST(CoreTargetTest, OnlyTheThreadsAskedFor) {
  CoreBuilder b;
  b.AddThread(100, 1, 2);
  b.AddThread(101, 1, 2);
  const std::string path = testing::WriteTempFile(b.Build());
  CoreOptions o;
  o.tids = {101};
  absl::StatusOr<std::unique_ptr<CoreTarget>> t = OpenCore(path, o);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ((*t)->Threads(), std::vector<pid_t>{101});
  o.tids = {102};
  EXPECT_TRUE(absl::IsNotFound(OpenCore(path, o).status()));
}

TEST(CoreTargetTest, MissingFilesAreReportedAndUnreadable) {
  CoreBuilder b;
  b.AddThread(100, 0x400010, 0x7ffd0000);
  b.SetNtFile({{0x400000, 0x401000, 0, "/nonexistent/app"}});
  b.AddSegment(0x400000, {}, 0x1000, 5);
  absl::StatusOr<std::unique_ptr<CoreTarget>> t =
      OpenCore(testing::WriteTempFile(b.Build()), {});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_FALSE((*t)->memory().ReadU8(0x400000).ok());
  ASSERT_EQ((*t)->report().files.size(), 1u);
  EXPECT_EQ((*t)->report().files[0].state, CoreFileStatus::State::kMissing);
  EXPECT_EQ((*t)->report().files[0].tried,
            std::vector<std::string>{"/nonexistent/app"});
  ASSERT_FALSE((*t)->report().warnings.empty());
  EXPECT_NE((*t)->report().warnings[0].find("/nonexistent/app"),
            std::string::npos);
}

// The core's dumped first page of /usr/bin/cat says which build was mapped;
// the file at the recorded path is another program.
TEST(CoreTargetTest, BuildIdMismatchIsDetectedAndThePathMapFixesIt) {
  CoreBuilder b;
  b.AddThread(100, 0x400010, 0x7ffd0000);
  b.SetNtFile({{0x400000, 0x402000, 0, "/usr/bin/ls"}});
  b.AddSegment(0x400000, FirstPage("/usr/bin/cat"), 0x2000, 4);
  const std::string core = testing::WriteTempFile(b.Build());
  absl::StatusOr<std::unique_ptr<CoreTarget>> t = OpenCore(core, {});
  ASSERT_TRUE(t.ok()) << t.status();
  const CoreFileStatus& f = (*t)->report().files[0];
  EXPECT_EQ(f.state, CoreFileStatus::State::kMismatch);
  EXPECT_FALSE(f.core_build_id.empty());
  EXPECT_NE(f.core_build_id, f.file_build_id);
  EXPECT_EQ((*t)->RecordedBuildId((*t)->mappings()[0]), f.core_build_id);
  // Not used for memory: the second page (not dumped) is unreadable.
  EXPECT_FALSE((*t)->memory().ReadU8(0x401000).ok());

  CoreOptions o;
  o.lookup.path_map = {{"/usr/bin/ls", "/usr/bin/cat"}};
  t = OpenCore(core, o);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ((*t)->report().files[0].state, CoreFileStatus::State::kFound);
  EXPECT_EQ((*t)->report().files[0].file, "/usr/bin/cat");
  EXPECT_TRUE((*t)->memory().ReadU8(0x401000).ok());
}

TEST(CoreTargetTest, SysrootNeverFallsBackToTheHost) {
  CoreBuilder b;
  b.AddThread(100, 0x400010, 0x7ffd0000);
  b.SetNtFile({{0x400000, 0x401000, 0, "/usr/bin/cat"}});
  b.AddSegment(0x400000, {}, 0x1000, 5);
  CoreOptions o;
  o.lookup.sysroot = ::testing::TempDir() + "/empty-sysroot";
  absl::StatusOr<std::unique_ptr<CoreTarget>> t =
      OpenCore(testing::WriteTempFile(b.Build()), o);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ((*t)->report().files[0].state, CoreFileStatus::State::kMissing);
}

TEST(CoreTargetTest, CompressedCore) {
  CoreBuilder b;
  b.AddThread(100, 0x400010, 0x7ffd0000);
  b.AddSegment(0x7ffd0000, std::vector<uint8_t>(0x2000, 0x5a));
  std::vector<uint8_t> raw = b.Build();
  std::vector<uint8_t> z(ZSTD_compressBound(raw.size()));
  z.resize(ZSTD_compress(z.data(), z.size(), raw.data(), raw.size(), 1));
  CoreOptions o;
  o.decompress.temp_dir = ::testing::TempDir();
  absl::StatusOr<std::unique_ptr<CoreTarget>> t =
      OpenCore(testing::WriteTempFile(z), o);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)->report().compression, memory::Compression::kZstd);
  EXPECT_EQ(*(*t)->memory().ReadU8(0x7ffd1fff), 0x5a);
  // A truncated compressed core is an error naming the problem.
  z.resize(z.size() / 2);
  absl::Status s = OpenCore(testing::WriteTempFile(z), o).status();
  EXPECT_TRUE(absl::IsDataLoss(s)) << s;
}

// A core names the files it mapped, and whoever reads it chooses none of
// them: a FIFO at such a path (or given as the core) is not a file to
// wait on. Opening one for reading blocks until a writer comes, through
// every signal a program catches; the alarm ends a test that blocks.
TEST(CoreTargetTest, FifosAreNotWaitedOn) {
  const std::string dir = ::testing::TempDir() + "/fifo-core";
  ASSERT_EQ(system(("rm -rf '" + dir + "' && mkdir '" + dir + "'").c_str()), 0);
  const std::string fifo = dir + "/lib.so";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  CoreBuilder b;
  b.AddThread(100, 0x10010, 0x7ffd0100);
  b.SetNtFile({{0x10000, 0x13000, 0, fifo}});
  b.AddSegment(0x10000, std::vector<uint8_t>(0x1000, 0xcc), 0x3000, 5);
  alarm(60);
  absl::StatusOr<std::unique_ptr<CoreTarget>> t =
      OpenCore(testing::WriteTempFile(b.Build()), {});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)->report().files[0].state, CoreFileStatus::State::kMissing);
  EXPECT_EQ(*(*t)->memory().ReadU8(0x10000), 0xcc);
  EXPECT_FALSE((*t)->memory().ReadU8(0x11000).ok());
  absl::Status s = OpenCore(fifo, {}).status();
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  alarm(0);
}

TEST(CoreTargetTest, MissingCoreIsNotFound) {
  EXPECT_TRUE(absl::IsNotFound(OpenCore("/nonexistent/core", {}).status()));
}

}  // namespace
}  // namespace unwindd::proc
