// Minidumps we write, read by tools nobody here wrote. For every fixture
// variant (the i386 ones too): a gcore core becomes a minidump with
// `unwind core --minidump=OUT`, and a running fixture one with `unwind pid
// --minidump=OUT`. Then, for every thread:
//   - `unwind minidump OUT` gives the frames `unwind core` (or `unwind pid`
//     in the same run) gave;
//   - Breakpad's minidump_dump reads every stream without an error and
//     lists the same threads; its minidump_stackwalk, with dump_syms .sym
//     files, agrees on every frame it found by CFI;
//   - Debian's lldb (`lldb -c OUT`) gives the same frames.
// Prints the totals and each minidump's size against its core's.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "testdata/core/core_tools.h"
#include "testdata/harness/frames.h"
#include "testdata/harness/subprocess.h"
#include "testdata/harness/tools.h"
#include "testdata/minidump/minidump_tools.h"

namespace unwindd::harness {
namespace {

namespace fs = std::filesystem;

int threads = 0, unwind_matched = 0, lldb_matched = 0, cfi_frames = 0;
std::vector<std::string> sizes;

class Summary : public ::testing::Environment {
 public:
  void TearDown() override {
    std::cout << "our minidumps: " << threads << " threads; unwind minidump matched "
              << unwind_matched << ", lldb matched " << lldb_matched << "; "
              << cfi_frames << " frames minidump_stackwalk found by CFI agreed\n"
              << "variant threads core_bytes minidump_bytes ratio\n";
    for (const std::string& s : sizes) std::cout << s << "\n";
  }
};
const ::testing::Environment* const kSummary =
    ::testing::AddGlobalTestEnvironment(new Summary);

std::string TempDir() {
  const char* base = std::getenv("TEST_TMPDIR");
  std::string t = absl::StrCat(base ? base : "/tmp", "/mdwXXXXXX");
  EXPECT_NE(mkdtemp(t.data()), nullptr);
  return t;
}

std::string Unwind() { return RunfilesRoot() + "/service/unwind"; }

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

uint64_t FileSize(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

// Everything a reader of `md` must agree on; `ours` is what `unwind`
// printed for the target the minidump was written from.
void CheckMinidump(const std::string& tools, const std::string& md,
                   const UnwindOutput& ours, const std::string& vdso_dir,
                   const std::string& what) {
  SCOPED_TRACE(what);
  const ThreadFrames pcs = ours.Pcs();
  absl::StatusOr<UnwindMinidumpResult> back = UnwindMinidumpFrames(Unwind(), md, {});
  ASSERT_TRUE(back.ok()) << back.status();
  Comparison same = CompareThreadFrames("unwind minidump", back->frames.Pcs(), "unwind", pcs);
  EXPECT_TRUE(same.ok()) << same.diff << back->frames.Describe();
  threads += same.threads;
  unwind_matched += same.matched;

  absl::StatusOr<MinidumpDump> dump = ReadWithMinidumpDump(tools, md);
  ASSERT_TRUE(dump.ok()) << dump.status();
  std::set<int64_t> dumped(dump->tids.begin(), dump->tids.end()), unwound;
  for (const auto& [tid, frames] : pcs) unwound.insert(tid);
  EXPECT_EQ(dumped, unwound);

  absl::StatusOr<StackwalkOutput> walked = Stackwalk(tools, md, SymbolStore());
  ASSERT_TRUE(walked.ok()) << walked.status();
  CfiComparison cfi = CompareCfiFrames(*walked, dump->tids, ours, Untranslatable());
  EXPECT_TRUE(cfi.diff.empty()) << cfi.diff;
  EXPECT_GE(cfi.frames, 2 * cfi.threads);
  cfi_frames += cfi.frames;

  absl::StatusOr<ThreadFrames> lldb = LldbMinidumpFrames(md, vdso_dir);
  ASSERT_TRUE(lldb.ok()) << lldb.status();
  Comparison vs_lldb = CompareThreadFrames("unwind", pcs, "lldb", *lldb);
  EXPECT_TRUE(vs_lldb.ok()) << vs_lldb.diff;
  lldb_matched += vs_lldb.matched;
}

class WriterToolsTest : public ::testing::TestWithParam<std::string> {};

TEST_P(WriterToolsTest, BreakpadAndLldbReadOurMinidumps) {
  absl::StatusOr<std::string> tools = BreakpadTools();
  if (absl::IsUnavailable(tools.status())) GTEST_SKIP() << tools.status();
  ASSERT_TRUE(tools.ok()) << tools.status();
  const std::string& variant = GetParam();
  const std::string dir = TempDir();
  absl::StatusOr<RunningProgram> program = StartProgram(FixturePath(variant));
  if (absl::IsUnimplemented(program.status())) GTEST_SKIP() << program.status();
  ASSERT_TRUE(program.ok()) << program.status();
  const pid_t pid = program->pid();
  std::vector<std::string> todo;
  for (const std::string& f : MappedFiles(pid)) {
    if (Dumped().insert(f).second) todo.push_back(f);
  }
  // The vDSO as a file, for Breakpad's symbol store and lldb's search
  // path: neither reads a module's code from the minidump's memory, and
  // i386 threads sit in the vDSO's __kernel_vsyscall.
  const std::string vdso_dir = dir + "/vdso";
  ASSERT_TRUE(ExtractVdso(pid, vdso_dir).ok());
  todo.push_back(vdso_dir + "/linux-gate.so");
  ASSERT_TRUE(DumpSyms(*tools, todo, SymbolStore(), &Untranslatable()).ok());

  // A live process, written while it is stopped for the unwind.
  const std::string live = dir + "/live.dmp";
  absl::StatusOr<ToolOutput> pid_run = RunTool(
      {Unwind(), "pid", absl::StrCat(pid), "--format=json", "--max-frames=4096",
       "--minidump=" + live},
      absl::Seconds(120));
  ASSERT_TRUE(pid_run.ok()) << pid_run.status();
  ASSERT_EQ(pid_run->exit_code, 0) << pid_run->stderr_text;
  EXPECT_TRUE(absl::StrContains(pid_run->stderr_text, "wrote minidump")) << pid_run->stderr_text;
  absl::StatusOr<UnwindOutput> live_frames = ParseUnwindJson(pid_run->stdout_text);
  ASSERT_TRUE(live_frames.ok()) << live_frames.status();

  absl::StatusOr<std::string> core = Gcore(pid, dir + "/core");
  ASSERT_TRUE(core.ok()) << core.status();
  program->Kill();
  const std::string from_core = dir + "/core.dmp";
  absl::StatusOr<UnwindCoreResult> core_frames =
      UnwindCoreFrames(Unwind(), *core, {"--minidump=" + from_core});
  ASSERT_TRUE(core_frames.ok()) << core_frames.status();
  EXPECT_TRUE(absl::StrContains(core_frames->errors, "; the core: ")) << core_frames->errors;

  CheckMinidump(*tools, live, *live_frames, vdso_dir, "unwind pid --minidump");
  CheckMinidump(*tools, from_core, core_frames->frames, vdso_dir, "unwind core --minidump");
  const uint64_t core_bytes = FileSize(*core), md_bytes = FileSize(from_core);
  sizes.push_back(absl::StrFormat("%s %d %d %d %.0fx", variant,
                                  core_frames->frames.threads.size(), core_bytes, md_bytes,
                                  static_cast<double>(core_bytes) / md_bytes));
  EXPECT_LT(md_bytes * 20, core_bytes) << "a minidump should be a small part of its core";
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, WriterToolsTest, ::testing::ValuesIn(ListFixtureVariants()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

}  // namespace
}  // namespace unwindd::harness
