// aarch64 minidumps, on this x86_64 host: each committed aarch64 core
// (testdata/aarch64, qemu-user cores of cross-compiled fixtures, its mini
// sysroot) written as a minidump by `unwind core --minidump`. For every
// thread, `unwind minidump` gives the frames `unwind core` gives (which
// core_golden_test holds to gdb-multiarch's); Breakpad's minidump_dump
// reads the file and its minidump_stackwalk agrees on every frame it found
// by CFI; lldb gives the same frames.
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <set>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "testdata/core/core_tools.h"
#include "testdata/harness/frames.h"
#include "testdata/harness/subprocess.h"
#include "testdata/harness/tools.h"
#include "testdata/minidump/minidump_tools.h"

namespace unwindd::harness {
namespace {

namespace fs = std::filesystem;

int threads = 0, matched = 0, lldb_matched = 0, cfi_frames = 0;

class Summary : public ::testing::Environment {
 public:
  void TearDown() override {
    std::cout << "aarch64 minidumps: " << threads << " threads, unwind minidump matched "
              << matched << ", lldb matched " << lldb_matched << "; " << cfi_frames
              << " frames minidump_stackwalk found by CFI agreed\n";
  }
};
const ::testing::Environment* const kSummary =
    ::testing::AddGlobalTestEnvironment(new Summary);

class AArch64MinidumpTest : public ::testing::TestWithParam<std::string> {};

TEST_P(AArch64MinidumpTest, OurMinidumpUnwindsLikeTheCore) {
  absl::StatusOr<std::string> tools = BreakpadTools();
  if (absl::IsUnavailable(tools.status())) GTEST_SKIP() << tools.status();
  ASSERT_TRUE(tools.ok()) << tools.status();
  const std::string& name = GetParam();
  const std::string src = RunfilesRoot() + "/testdata/aarch64";
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string dir = absl::StrCat(tmp ? tmp : "/tmp", "/a64_", name);
  fs::create_directories(dir);
  const std::string core = dir + "/core";
  absl::StatusOr<ToolOutput> xz = RunTool(
      {"sh", "-c", absl::StrCat("xz -dc '", src, "/", name, ".core.xz' > '", core, "'")},
      absl::Seconds(30));
  ASSERT_TRUE(xz.ok() && xz->exit_code == 0) << xz.status();
  const std::vector<std::string> where = {absl::StrCat("--sysroot=", src, "/sysroot"),
                                          absl::StrCat("--exe=", src, "/", name)};
  std::vector<std::string> args = where;
  args.push_back("--minidump=" + dir + "/a64.dmp");
  absl::StatusOr<UnwindCoreResult> from_core =
      UnwindCoreFrames(RunfilesRoot() + "/service/unwind", core, args);
  ASSERT_TRUE(from_core.ok()) << from_core.status();
  const std::string md = dir + "/a64.dmp";
  absl::StatusOr<UnwindMinidumpResult> from_md =
      UnwindMinidumpFrames(RunfilesRoot() + "/service/unwind", md, where);
  ASSERT_TRUE(from_md.ok()) << from_md.status();
  const ThreadFrames pcs = from_core->frames.Pcs();
  Comparison same = CompareThreadFrames("unwind minidump", from_md->frames.Pcs(),
                                        "unwind core", pcs);
  EXPECT_TRUE(same.ok()) << same.diff;
  threads += same.threads;
  matched += same.matched;

  absl::StatusOr<MinidumpDump> dump = ReadWithMinidumpDump(*tools, md);
  ASSERT_TRUE(dump.ok()) << dump.status();
  const std::string symbols = dir + "/symbols";
  UntranslatableCfi untranslatable;
  std::vector<std::string> files = {src + "/" + name};
  for (const auto& e : fs::directory_iterator(src + "/sysroot/lib")) {
    files.push_back(e.path().string());
  }
  ASSERT_TRUE(DumpSyms(*tools, files, symbols, &untranslatable).ok());
  absl::StatusOr<StackwalkOutput> walked = Stackwalk(*tools, md, symbols);
  ASSERT_TRUE(walked.ok()) << walked.status();
  CfiComparison cfi = CompareCfiFrames(*walked, dump->tids, from_core->frames, untranslatable);
  EXPECT_TRUE(cfi.diff.empty()) << cfi.diff;
  EXPECT_GE(cfi.frames, 2 * cfi.threads);
  cfi_frames += cfi.frames;

  // lldb finds the modules by file name in its search path. It has two
  // limits here that are not the minidump's: a minidump has no stream for
  // the PAC masks a core's NT_ARM_PAC_MASK holds, so lldb does not strip
  // threads_O2_pac's signed return addresses (we fall back to the address
  // size); and it recognises a signal frame by the vDSO's
  // __kernel_rt_sigreturn, where qemu-user's trampoline is anonymous code.
  // So no PAC core, and frames compared up to that trampoline, where lldb
  // stops.
  if (name == "threads_O2_pac") return;
  absl::StatusOr<ThreadFrames> lldb = LldbMinidumpFrames(md, src + "/sysroot/lib' '" + src);
  ASSERT_TRUE(lldb.ok()) << lldb.status();
  ThreadFrames up_to_trampoline = pcs;
  for (const auto& [tid, t] : from_core->frames.threads) {
    for (size_t i = 1; i < t.frames.size(); ++i) {
      if (t.frames[i].method == "signal" && t.frames[i - 1].module.empty()) {
        up_to_trampoline[tid].resize(i);
        break;
      }
    }
  }
  Comparison vs_lldb = CompareThreadFrames("unwind", up_to_trampoline, "lldb", *lldb);
  EXPECT_TRUE(vs_lldb.ok()) << vs_lldb.diff;
  lldb_matched += vs_lldb.matched;
}

INSTANTIATE_TEST_SUITE_P(Cores, AArch64MinidumpTest,
                         ::testing::Values("threads_O0_fp", "threads_O2_nofp", "threads_O2_pac",
                                           "signal_O0_fp", "signal_O2_nofp"));

}  // namespace
}  // namespace unwindd::harness
