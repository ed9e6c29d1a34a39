// Minidumps nobody here wrote: Breakpad's core2md turns a gcore core of
// every fixture variant (and copies of its /proc/PID files) into a
// minidump. For every thread, `unwind minidump` on it must give the frames
// `unwind core` gives on the core, and eu-stack --core's; and Breakpad's
// own minidump_stackwalk, with dump_syms .sym files of every mapped file,
// must agree on every frame it found by CFI. Prints
//   core2md minidumps: compared N threads, M matched unwind core and
//     eu-stack (C of them cut where the minidump holds no stack)
// A thread whose signal handler runs on an alternate stack is compared up
// to where the minidump's copy of memory ends (CutWhereNotCaptured):
// Breakpad keeps only the memory from each thread's SP up.
//   minidump_stackwalk: N threads, F frames found by CFI, all agreed
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <set>

#include "absl/strings/match.h"
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

int compared_threads = 0, matched_threads = 0, cut_threads = 0;
int cfi_threads = 0, cfi_frames = 0;

class Summary : public ::testing::Environment {
 public:
  void TearDown() override {
    std::cout << "core2md minidumps: compared " << compared_threads << " threads, "
              << matched_threads << " matched unwind core and eu-stack (" << cut_threads
              << " of them cut where the minidump holds no stack)\n"
              << "minidump_stackwalk: " << cfi_threads << " threads, " << cfi_frames
              << " frames found by CFI compared\n";
  }
};
const ::testing::Environment* const kSummary =
    ::testing::AddGlobalTestEnvironment(new Summary);

std::string TempDir() {
  const char* base = std::getenv("TEST_TMPDIR");
  std::string t = absl::StrCat(base ? base : "/tmp", "/bpXXXXXX");
  EXPECT_NE(mkdtemp(t.data()), nullptr);
  return t;
}

std::string Unwind() { return RunfilesRoot() + "/service/unwind"; }

// One symbol store for the whole test: libc's .sym is made once.
std::string SymbolStore() {
  static const std::string* dir = new std::string(TempDir() + "/symbols");
  return *dir;
}
UntranslatableCfi& Untranslatable() {
  static auto* u = new UntranslatableCfi();
  return *u;
}
std::set<std::string>& Dumped() {
  static auto* s = new std::set<std::string>();
  return *s;
}

std::vector<std::string> Variants() {
  std::vector<std::string> out;
  // core2md reads cores of its own word size: the i386 variants are
  // covered by our writer (writer_tools_test) instead.
  for (const std::string& v : ListFixtureVariants()) {
    if (!IsI386Variant(v)) out.push_back(v);
  }
  return out;
}

class BreakpadTest : public ::testing::TestWithParam<std::string> {};

TEST_P(BreakpadTest, UnwindMinidumpMatchesTheCoreAndBreakpadsCfiFrames) {
  absl::StatusOr<std::string> tools = BreakpadTools();
  if (absl::IsUnavailable(tools.status())) GTEST_SKIP() << tools.status();
  ASSERT_TRUE(tools.ok()) << tools.status();
  const std::string& variant = GetParam();
  const std::string dir = TempDir();
  absl::StatusOr<RunningProgram> program = StartProgram(FixturePath(variant));
  ASSERT_TRUE(program.ok()) << program.status();
  const pid_t pid = program->pid();
  ASSERT_TRUE(CopyProcFiles(pid, dir + "/proc").ok());
  std::vector<std::string> files = MappedFiles(pid);
  absl::StatusOr<std::string> core = Gcore(pid, dir + "/core");
  ASSERT_TRUE(core.ok()) << core.status();
  program->Kill();

  absl::StatusOr<std::string> md = Core2md(*tools, *core, dir + "/proc", dir + "/breakpad.dmp");
  ASSERT_TRUE(md.ok()) << md.status();

  absl::StatusOr<UnwindCoreResult> from_core = UnwindCoreFrames(Unwind(), *core, {});
  ASSERT_TRUE(from_core.ok()) << from_core.status();
  absl::StatusOr<UnwindMinidumpResult> from_md = UnwindMinidumpFrames(Unwind(), *md, {});
  ASSERT_TRUE(from_md.ok()) << from_md.status();
  SymbolNames names;
  absl::StatusOr<ThreadFrames> eu = EuStackCoreFrames(*core, FixturePath(variant), &names);
  ASSERT_TRUE(eu.ok()) << eu.status();

  absl::StatusOr<MinidumpDump> dump = ReadWithMinidumpDump(*tools, *md);
  ASSERT_TRUE(dump.ok()) << dump.status();
  // Breakpad keeps each thread's stack from its SP: a handler on an
  // alternate stack leaves out the stack of the code it interrupted.
  int cut = 0;
  const ThreadFrames core_pcs =
      CutWhereNotCaptured(from_md->frames, from_core->frames, *dump, &cut);
  const ThreadFrames eu_pcs = CutLike(*eu, core_pcs);
  const ThreadFrames pcs = from_md->frames.Pcs();
  Comparison vs_core =
      CompareThreadFrames("unwind minidump", pcs, "unwind core", core_pcs, &names);
  Comparison vs_eu = CompareThreadFrames("unwind minidump", pcs, "eu-stack", eu_pcs, &names);
  compared_threads += vs_core.threads;
  cut_threads += cut;
  matched_threads += CountMatchedBoth(pcs, pcs, core_pcs, eu_pcs);
  EXPECT_TRUE(vs_core.ok()) << vs_core.diff << "minidump:\n" << from_md->frames.Describe();
  EXPECT_TRUE(vs_eu.ok()) << vs_eu.diff;
  // Every module was found by its build-id, as the core's files were.
  EXPECT_FALSE(absl::StrContains(from_md->json, "\"state\": \"missing\""));
  EXPECT_FALSE(absl::StrContains(from_md->json, "\"state\": \"mismatch\""));

  // Breakpad's own stackwalker, with .sym files of every mapped file.
  std::vector<std::string> todo;
  for (const std::string& f : files) {
    if (Dumped().insert(f).second) todo.push_back(f);
  }
  ASSERT_TRUE(DumpSyms(*tools, todo, SymbolStore(), &Untranslatable()).ok());
  absl::StatusOr<StackwalkOutput> walked = Stackwalk(*tools, *md, SymbolStore());
  ASSERT_TRUE(walked.ok()) << walked.status();
  CfiComparison cfi = CompareCfiFrames(*walked, dump->tids, from_md->frames, Untranslatable());
  EXPECT_TRUE(cfi.diff.empty()) << cfi.diff;
  EXPECT_EQ(cfi.threads, static_cast<int>(pcs.size()));
  // Frame 0 of every thread and at least the libc frame above it.
  EXPECT_GE(cfi.frames, 2 * cfi.threads);
  cfi_threads += cfi.threads;
  cfi_frames += cfi.frames;
  std::cout << variant << ": " << vs_core.threads << " threads, " << cfi.frames
            << " CFI frames of Breakpad's compared\n";
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, BreakpadTest, ::testing::ValuesIn(Variants()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

}  // namespace
}  // namespace unwindd::harness
