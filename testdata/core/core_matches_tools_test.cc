// Every fixture variant, dumped twice — by gdb's gcore while it runs, and by
// the kernel after a fatal signal — and unwound from each core: for every
// thread `unwind core` must give the PCs of `eu-stack --core --executable`
// and of gdb's `core-file` (the same settings as the live comparison).
//
// The program runs from a copy that is moved away before any unwinder
// looks at the cores, so the executable is never at its recorded path: the
// references get it with --executable / `file`, and `unwind core` must give
// the same frames three ways: --exe, --path-map=OLD=NEW, and --sysroot over
// a tree that mirrors the recorded paths. The demo variants' kernel cores
// also keep their file-backed pages, and must give the same frames with no
// file at all (modules rebuilt from the core's memory).
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "testdata/core/core_tools.h"
#include "testdata/harness/frames.h"
#include "testdata/harness/subprocess.h"
#include "testdata/harness/tools.h"

namespace unwindd::harness {
namespace {

struct Totals {
  int threads = 0;
  int matched = 0;
};
Totals gcore_totals, kernel_totals;
std::vector<std::string> skipped;

class SummaryEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    // Inherited by every fixture started from here, so the kernel dumps it.
    struct rlimit unlimited = {RLIM_INFINITY, RLIM_INFINITY};
    setrlimit(RLIMIT_CORE, &unlimited);
  }
  void TearDown() override {
    std::cout << "gcore cores: compared " << gcore_totals.threads
              << " threads, " << gcore_totals.matched << " matched\n"
              << "kernel cores: compared " << kernel_totals.threads
              << " threads, " << kernel_totals.matched << " matched\n";
    for (const std::string& s : skipped) std::cout << "skipped: " << s << "\n";
  }
};

const ::testing::Environment* const kSummary =
    ::testing::AddGlobalTestEnvironment(new SummaryEnvironment);

std::string UnwindBinary() {
  return absl::StrCat(RunfilesRoot(), "/service/unwind");
}

std::string MakeTempDir() {
  const char* base = std::getenv("TEST_TMPDIR");
  std::string t = absl::StrCat(base ? base : "/tmp", "/coreXXXXXX");
  EXPECT_NE(mkdtemp(t.data()), nullptr);
  return t;
}

namespace fs = std::filesystem;

// Paths of the files the process maps, from /proc/PID/maps.
std::set<std::string> MappedFiles(pid_t pid) {
  std::ifstream maps(absl::StrCat("/proc/", pid, "/maps"));
  std::set<std::string> out;
  for (std::string line; std::getline(maps, line);) {
    size_t slash = line.find('/');
    if (slash != std::string::npos) out.insert(line.substr(slash));
  }
  return out;
}

// A sysroot mirroring `files`: the executable copied from where it was
// moved, every library a symlink to itself.
void MakeSysroot(const std::string& root, const std::set<std::string>& files,
                 const std::string& orig_exe, const std::string& moved_exe) {
  for (const std::string& f : files) {
    const std::string target = absl::StrCat(root, f);
    fs::create_directories(fs::path(target).parent_path());
    if (f == orig_exe) {
      fs::copy_file(moved_exe, target);
    } else {
      fs::create_symlink(f, target);
    }
  }
}

class CoreMatchesToolsTest : public ::testing::TestWithParam<std::string> {};

TEST_P(CoreMatchesToolsTest, GcoreAndKernelCoresMatchEuStackAndGdb) {
  const std::string& variant = GetParam();
  const std::string dir = MakeTempDir();
  const std::string orig = dir + "/orig", moved = dir + "/moved";
  const std::string crash_dir = dir + "/crash";
  fs::create_directories(orig);
  fs::create_directories(crash_dir);
  const std::string orig_exe = absl::StrCat(orig, "/", variant);
  const std::string moved_exe = absl::StrCat(moved, "/", variant);
  fs::copy_file(FixturePath(variant), orig_exe);

  // The kernel writes a relative core_pattern in the crashing process's
  // working directory, which it inherits from us.
  ASSERT_EQ(chdir(crash_dir.c_str()), 0);
  absl::StatusOr<RunningProgram> program = StartProgram(orig_exe);
  // An i386 fixture on a kernel that cannot execute it: nothing to compare.
  if (absl::IsUnimplemented(program.status())) GTEST_SKIP() << program.status();
  ASSERT_TRUE(program.ok()) << program.status();
  const std::set<std::string> files = MappedFiles(program->pid());
  std::vector<std::pair<std::string, std::string>> cores;  // kind, path
  absl::StatusOr<std::string> gcore = Gcore(program->pid(), dir + "/gcore");
  ASSERT_TRUE(gcore.ok()) << gcore.status();
  cores.emplace_back("gcore", *gcore);
  // The demo variants' kernel cores also keep file-backed memory (core(5)
  // coredump_filter bits 2 and 3), so they must unwind with no file at all.
  const bool self_contained = absl::StartsWith(variant, "demo_");
  if (self_contained) {
    std::ofstream(absl::StrCat("/proc/", program->pid(), "/coredump_filter"))
        << "0x3f";
  }
  absl::StatusOr<std::string> kernel =
      CrashAndFindKernelCore(*program, SIGSEGV, crash_dir);
  if (absl::IsFailedPrecondition(kernel.status())) {
    skipped.push_back(absl::StrCat(variant, ": ", kernel.status().message()));
  } else {
    ASSERT_TRUE(kernel.ok()) << kernel.status();
    cores.emplace_back("kernel", *kernel);
  }
  program->Kill();
  ASSERT_EQ(chdir(dir.c_str()), 0);

  // From here on the executable is not at its recorded path.
  ASSERT_EQ(rename(orig.c_str(), moved.c_str()), 0);
  MakeSysroot(dir + "/sysroot", files, orig_exe, moved_exe);

  std::vector<std::string> paths;
  for (const auto& c : cores) paths.push_back(c.second);
  absl::StatusOr<std::vector<ThreadFrames>> gdb =
      GdbCoreFrames(moved_exe, paths);
  ASSERT_TRUE(gdb.ok()) << gdb.status();

  for (size_t i = 0; i < cores.size(); ++i) {
    const auto& [kind, core] = cores[i];
    SCOPED_TRACE(absl::StrCat(variant, " ", kind, " core ", core));
    SymbolNames names;
    absl::StatusOr<ThreadFrames> eu =
        EuStackCoreFrames(core, moved_exe, &names);
    ASSERT_TRUE(eu.ok()) << eu.status();
    absl::StatusOr<UnwindCoreResult> ours = UnwindCoreFrames(
        UnwindBinary(), core, {absl::StrCat("--exe=", moved_exe)});
    ASSERT_TRUE(ours.ok()) << ours.status();
    const ThreadFrames pcs = ours->frames.Pcs();
    int cut = 0;
    const ThreadFrames pcs_for_eu =
        IsI386Variant(variant) ? ApplyI386EuStackRule(pcs, *eu, names, &cut)
                               : pcs;
    Comparison vs_eu =
        CompareThreadFrames("unwind", pcs_for_eu, "eu-stack", *eu, &names);
    Comparison vs_gdb =
        CompareThreadFrames("unwind", pcs, "gdb", (*gdb)[i], &names);
    const int matched = CountMatchedBoth(pcs, pcs_for_eu, *eu, (*gdb)[i]);
    Totals& totals = kind == "gcore" ? gcore_totals : kernel_totals;
    totals.threads += vs_eu.threads;
    totals.matched += matched;
    EXPECT_TRUE(vs_eu.ok()) << "unwind differs from eu-stack\n"
                            << vs_eu.diff << "unwind's view:\n"
                            << ours->frames.Describe();
    EXPECT_TRUE(vs_gdb.ok()) << "unwind differs from gdb\n" << vs_gdb.diff;
    std::cout << variant << " " << kind << ": " << vs_eu.threads << " threads, "
              << matched << " matched\n";

    // The same frames when the executable is found by --path-map or under
    // --sysroot instead of --exe.
    for (const std::string& arg :
         {absl::StrCat("--path-map=", orig, "=", moved),
          absl::StrCat("--sysroot=", dir, "/sysroot")}) {
      absl::StatusOr<UnwindCoreResult> other =
          UnwindCoreFrames(UnwindBinary(), core, {arg});
      ASSERT_TRUE(other.ok()) << other.status();
      EXPECT_EQ(other->frames.Pcs(), pcs) << arg;
      EXPECT_FALSE(absl::StrContains(other->json, "\"state\": \"missing\""))
          << arg;
    }
    if (kind == "kernel" && self_contained) {
      fs::create_directories(dir + "/empty");
      absl::StatusOr<UnwindCoreResult> bare = UnwindCoreFrames(
          UnwindBinary(), core, {absl::StrCat("--sysroot=", dir, "/empty")});
      ASSERT_TRUE(bare.ok()) << bare.status();
      EXPECT_EQ(bare->frames.Pcs(), pcs) << "with no files";
      EXPECT_TRUE(absl::StrContains(bare->json, "\"from_memory\": true"));
    }
    if (kind == "kernel") {
      // The thread that took the signal says who sent it.
      EXPECT_TRUE(absl::StrContains(
          ours->json,
          absl::StrCat("\"name\": \"SIGSEGV\", \"code\": 0, \"code_name\": "
                       "\"SI_USER\", \"sender_pid\": ",
                       getpid())))
          << ours->json.substr(0, 2000);
    }
  }
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CoreMatchesToolsTest,
                         ::testing::ValuesIn(ListFixtureVariants()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

}  // namespace
}  // namespace unwindd::harness
