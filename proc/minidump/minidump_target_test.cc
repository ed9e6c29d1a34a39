#include "proc/minidump/minidump_target.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proc/minidump/context.h"
#include "proc/minidump/format.h"
#include "proc/minidump/testing/minidump_builder.h"
#include "proc/recorded_files.h"

namespace unwindd::proc {
namespace {

namespace fs = std::filesystem;
using minidump::Location;
using minidump::testing::ElfCvRecord;
using minidump::testing::ExceptionStream;
using minidump::testing::MemoryList;
using minidump::testing::MinidumpBuilder;
using minidump::testing::ModuleList;
using minidump::testing::SystemInfoStream;
using minidump::testing::Text;
using minidump::testing::ThreadList;
using ::testing::HasSubstr;

std::string TempDir() {
  const char* t = std::getenv("TEST_TMPDIR");
  std::string d = absl::StrCat(t ? t : "/tmp", "/mdtXXXXXX");
  EXPECT_NE(mkdtemp(d.data()), nullptr);
  return d;
}

std::string WriteFile(const std::string& dir, const std::vector<uint8_t>& bytes) {
  const std::string path = dir + "/test.dmp";
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  return path;
}

// This test's own executable, a real ELF file with a build-id.
std::string SelfBuildId() {
  std::optional<OpenedCandidate> f = OpenCandidate("/proc/self/exe");
  return f ? FileBuildId(*f) : "";
}

Location AddContext(MinidumpBuilder& b, uint64_t pc, uint64_t sp) {
  arch::RegisterSet regs(arch::Arch::kX86_64);
  regs.set_pc(pc);
  regs.set_sp(sp);
  regs.Set(6, 0x6666);
  const std::vector<uint8_t> ctx = minidump::WriteContext(regs);
  return {static_cast<uint32_t>(ctx.size()), b.Add(ctx)};
}

// A minidump of two threads (tid 100 main, 101) whose one module is
// `module_path` with `build_id`, mapped at 0x555500000000.
std::vector<uint8_t> TwoThreads(const std::string& module_path,
                                const std::string& build_id, bool with_maps) {
  MinidumpBuilder b;
  const Location c100 = AddContext(b, 0x555500001000, 0x7ffd0000);
  const Location c101 = AddContext(b, 0x555500002000, 0x7ffc0000);
  const uint32_t stack = b.Add(std::vector<uint8_t>(64, 0x5a));
  minidump::ThreadEntry t100, t101;
  t100.tid = 100;
  t100.context = c100;
  t100.stack = {0x7ffd0000, 64, stack};
  t101.tid = 101;
  t101.context = c101;
  b.Stream(minidump::kThreadListStream, ThreadList({t101, t100}));
  b.Stream(minidump::kSystemInfoStream,
           SystemInfoStream(minidump::kCpuAmd64, minidump::kPlatformLinux));
  const uint32_t name = b.AddString(module_path);
  const uint32_t gate = b.AddString("linux-gate.so");
  std::vector<uint8_t> cv = ElfCvRecord(build_id);
  const uint32_t cv_rva = b.Add(cv);
  b.Stream(minidump::kModuleListStream,
           ModuleList({{0x555500000000, 0x4000, name, {static_cast<uint32_t>(cv.size()), cv_rva}},
                       {0x7fff00000000, 0x2000, gate, {}}}));
  b.Stream(minidump::kLinuxProcStatus, Text("Name:\tprog\nPid:\t100\nPPid:\t1\n"));
  if (with_maps) {
    b.Stream(minidump::kLinuxMaps,
             Text(absl::StrCat("555500000000-555500001000 r--p 00000000 08:01 4242 ",
                               module_path, "\n555500001000-555500004000 r-xp 00001000 08:01 4242 ",
                               module_path, "\n7ffcf0000000-7ffd00010000 rw-p 00000000 00:00 0 [stack]\n")));
  }
  return b.Build();
}

TEST(MinidumpTargetTest, FindsModulesByBuildIdAndSaysWhatIsWrong) {
  const std::string id = SelfBuildId();
  ASSERT_FALSE(id.empty()) << "the test binary has no build-id";
  const std::string dir = TempDir();
  const std::string exe = dir + "/prog";
  fs::copy_file("/proc/self/exe", exe);

  absl::StatusOr<std::unique_ptr<MinidumpTarget>> t =
      OpenMinidump(WriteFile(dir, TwoThreads(exe, id, true)), {});
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ((*t)->report().files.size(), 1u);
  EXPECT_EQ((*t)->report().files[0].state, CoreFileStatus::State::kFound);
  EXPECT_EQ((*t)->report().files[0].core_build_id, id);
  EXPECT_EQ((*t)->report().executable, exe);
  EXPECT_EQ((*t)->report().modules_from, "linux_maps");

  // Another build of the file: reported, not used.
  std::string other = id;
  other[0] = other[0] == '0' ? '1' : '0';
  t = OpenMinidump(WriteFile(dir, TwoThreads(exe, other, true)), {});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)->report().files[0].state, CoreFileStatus::State::kMismatch);
  EXPECT_THAT((*t)->report().warnings.back(),
              HasSubstr(absl::StrCat("but the minidump recorded ", other)));

  // Recorded where nothing is here; then found under --sysroot.
  const std::string recorded = "/opt/crashed-machine/bin/prog";
  t = OpenMinidump(WriteFile(dir, TwoThreads(recorded, id, true)), {});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)->report().files[0].state, CoreFileStatus::State::kMissing);
  EXPECT_THAT((*t)->report().warnings.back(), HasSubstr("not found"));
  fs::create_directories(dir + "/sysroot/opt/crashed-machine/bin");
  fs::copy_file(exe, dir + "/sysroot" + recorded);
  MinidumpOptions with_sysroot;
  with_sysroot.lookup.sysroot = dir + "/sysroot";
  t = OpenMinidump(WriteFile(dir, TwoThreads(recorded, id, true)), with_sysroot);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)->report().files[0].state, CoreFileStatus::State::kFound);
  EXPECT_EQ((*t)->report().files[0].file, dir + "/sysroot" + recorded);
  fs::remove_all(dir);
}

TEST(MinidumpTargetTest, MappingsComeFromTheMapsStreamWithoutInodes) {
  const std::string dir = TempDir();
  absl::StatusOr<std::unique_ptr<MinidumpTarget>> t =
      OpenMinidump(WriteFile(dir, TwoThreads("/bin/prog", "aa", true)), {});
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ((*t)->mappings().size(), 3u);
  for (const Mapping& m : (*t)->mappings()) EXPECT_EQ(m.inode, 0u);
  EXPECT_EQ((*t)->mappings()[1].offset, 0x1000u);
  EXPECT_EQ((*t)->RecordedBuildId((*t)->mappings()[1]), "aa");
  fs::remove_all(dir);
}

TEST(MinidumpTargetTest, WithoutMapsEachModuleIsOneMappingAndLinuxGateIsTheVdso) {
  const std::string dir = TempDir();
  absl::StatusOr<std::unique_ptr<MinidumpTarget>> t =
      OpenMinidump(WriteFile(dir, TwoThreads("/bin/prog", "aa", false)), {});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)->report().modules_from, "module_list");
  std::vector<std::string> paths;
  for (const Mapping& m : (*t)->mappings()) paths.push_back(m.path);
  // The stack (anonymous, for frame-pointer bounds), the module, the vDSO.
  EXPECT_THAT(paths, ::testing::ElementsAre("", "/bin/prog", "[vdso]"));
  EXPECT_EQ((*t)->mappings()[1].end, 0x555500004000u);
  fs::remove_all(dir);
}

TEST(MinidumpTargetTest, ThreadsRegistersPidAndStackMemory) {
  const std::string dir = TempDir();
  absl::StatusOr<std::unique_ptr<MinidumpTarget>> t =
      OpenMinidump(WriteFile(dir, TwoThreads("/bin/prog", "aa", true)), {});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)->pid(), 100);  // from the proc status stream
  EXPECT_THAT((*t)->Threads(), ::testing::ElementsAre(100, 101));
  absl::StatusOr<arch::RegisterSet> r = (*t)->InitialRegisters(101);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->pc(), 0x555500002000u);
  EXPECT_EQ(r->Get(6), 0x6666u);
  EXPECT_TRUE(absl::IsNotFound((*t)->InitialRegisters(7).status()));
  uint8_t b[4] = {};
  EXPECT_EQ((*t)->memory().Read(0x7ffd0000 + 60, absl::MakeSpan(b)), 4u);
  EXPECT_EQ(b[3], 0x5a);
  EXPECT_EQ((*t)->memory().Read(0x7ffd0000 + 64, absl::MakeSpan(b)), 0u);

  MinidumpOptions only;
  only.tids = {101, 101};
  t = OpenMinidump(WriteFile(dir, TwoThreads("/bin/prog", "aa", true)), only);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_THAT((*t)->Threads(), ::testing::ElementsAre(101));
  only.tids = {5};
  t = OpenMinidump(WriteFile(dir, TwoThreads("/bin/prog", "aa", true)), only);
  EXPECT_TRUE(absl::IsNotFound(t.status())) << t.status();
  fs::remove_all(dir);
}

TEST(MinidumpTargetTest, TheCrashingThreadTakesTheExceptionContext) {
  MinidumpBuilder b;
  const Location handler = AddContext(b, 0x1111, 0x7ffd0000);
  const Location fault = AddContext(b, 0x2222, 0x7ffd0100);
  minidump::ThreadEntry t;
  t.tid = 9;
  t.context = handler;
  b.Stream(minidump::kThreadListStream, ThreadList({t}));
  b.Stream(minidump::kSystemInfoStream,
           SystemInfoStream(minidump::kCpuAmd64, minidump::kPlatformLinux));
  b.Stream(minidump::kExceptionStream, ExceptionStream(9, 11, 1, 0xbad, fault));
  const std::string dir = TempDir();
  absl::StatusOr<std::unique_ptr<MinidumpTarget>> md = OpenMinidump(WriteFile(dir, b.Build()), {});
  ASSERT_TRUE(md.ok()) << md.status();
  absl::StatusOr<arch::RegisterSet> r = (*md)->InitialRegisters(9);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->pc(), 0x2222u);
  EXPECT_EQ(r->sp(), 0x7ffd0100u);
  std::optional<SignalInfo> s = (*md)->ThreadSignal(9);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->number, 11);
  EXPECT_EQ(s->code, 1);
  EXPECT_EQ(s->fault_address, 0xbadu);
  EXPECT_EQ((*md)->report().crash_tid, 9);
  fs::remove_all(dir);
}

TEST(MinidumpTargetTest, ArchFromContextsWhenThereIsNoSystemInfoAndUnknownCpus) {
  MinidumpBuilder b;
  arch::RegisterSet regs(arch::Arch::kAArch64);
  regs.set_pc(0x4000);
  const std::vector<uint8_t> ctx = minidump::WriteContext(regs);
  minidump::ThreadEntry t;
  t.tid = 1;
  t.context = {static_cast<uint32_t>(ctx.size()), b.Add(ctx)};
  b.Stream(minidump::kThreadListStream, ThreadList({t}));
  const std::string dir = TempDir();
  absl::StatusOr<std::unique_ptr<MinidumpTarget>> md = OpenMinidump(WriteFile(dir, b.Build()), {});
  ASSERT_TRUE(md.ok()) << md.status();
  EXPECT_EQ((*md)->arch(), arch::Arch::kAArch64);
  EXPECT_EQ((*md)->InitialRegisters(1)->pc(), 0x4000u);

  b.Stream(minidump::kSystemInfoStream, SystemInfoStream(minidump::kCpuArm, minidump::kPlatformLinux));
  md = OpenMinidump(WriteFile(dir, b.Build()), {});
  EXPECT_TRUE(absl::IsUnimplemented(md.status())) << md.status();
  fs::remove_all(dir);
}

TEST(MinidumpTargetTest, ACompressedMinidumpIsDecompressed) {
  const std::string dir = TempDir();
  const std::string path = WriteFile(dir, TwoThreads("/bin/prog", "aa", true));
  ASSERT_EQ(system(absl::StrCat("zstd -q -f ", path, " -o ", path, ".zst").c_str()), 0);
  absl::StatusOr<std::unique_ptr<MinidumpTarget>> t = OpenMinidump(path + ".zst", {});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)->report().compression, memory::Compression::kZstd);
  EXPECT_EQ((*t)->Threads().size(), 2u);
  fs::remove_all(dir);
}

TEST(MinidumpTargetTest, LooksLikeMinidumpChecksTheSignature) {
  EXPECT_TRUE(LooksLikeMinidump({'M', 'D', 'M', 'P', 0x93, 0xa7}));
  EXPECT_FALSE(LooksLikeMinidump({0x7f, 'E', 'L', 'F'}));
  EXPECT_FALSE(LooksLikeMinidump({'M', 'D'}));
}

}  // namespace
}  // namespace unwindd::proc
