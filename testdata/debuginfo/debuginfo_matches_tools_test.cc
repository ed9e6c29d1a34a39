// Binaries whose CFI is elsewhere unwind exactly as before stripping, and as
// eu-stack and gdb unwind them (issue 15):
//
//   - live: each variant (split debug file beside it, MiniDebugInfo,
//     compressed .debug_frame, the debug file in a build-id directory)
//     gives, thread by thread, the same module-relative PCs and methods as
//     the unstripped binary, and the same PCs as eu-stack and gdb on the
//     same process where those tools can read the variant;
//   - cores: a gcore of a split binary unwinds the same with its files in
//     place and with the files only on a debuginfod server, fetched.
//
// Prints "<case>: compared N threads, M matched" per case.
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "testdata/core/core_tools.h"
#include "testdata/debuginfo/servers.h"
#include "testdata/harness/binutils_facts.h"
#include "testdata/harness/frames.h"
#include "testdata/harness/json.h"
#include "testdata/harness/subprocess.h"
#include "testdata/harness/tools.h"

namespace unwindd::harness {
namespace {

using debuginfo_testing::DebuginfodServer;
using debuginfo_testing::MakeDirs;
using debuginfo_testing::NewTempDir;
using debuginfo_testing::ReadFile;
using debuginfo_testing::WriteFile;

constexpr const char* kPrograms[] = {
    "threads_c_O2_nofp_pie_debugframe",
    "signal_handler_O2_nofp_pie_debugframe",
    "recursion_O0_nofp_nopie_debugframe",
};

// case -> {threads compared, threads matched}
std::map<std::string, std::pair<int, int>>& Tally() {
  static auto* t = new std::map<std::string, std::pair<int, int>>;
  return *t;
}

class SummaryEnvironment : public ::testing::Environment {
 public:
  void TearDown() override {
    for (const auto& [name, n] : Tally()) {
      std::cout << name << ": compared " << n.first << " threads, " << n.second
                << " matched\n";
    }
  }
};
const ::testing::Environment* const kSummary =
    ::testing::AddGlobalTestEnvironment(new SummaryEnvironment);

std::string UnwindBinary() { return absl::StrCat(RunfilesRoot(), "/service/unwind"); }

std::string BasePath(const std::string& name) {
  if (name == kPrograms[0]) return FixturePath(name);
  return absl::StrCat(RunfilesRoot(), "/testdata/debuginfo/", name);
}
std::string VariantPath(const std::string& kind, const std::string& name) {
  return absl::StrCat(RunfilesRoot(), "/testdata/debuginfo/", kind, "/", name);
}

void Copy(const std::string& from, const std::string& to) {
  absl::StatusOr<std::string> b = ReadFile(from);
  ASSERT_TRUE(b.ok()) << b.status();
  ASSERT_TRUE(MakeDirs(to.substr(0, to.rfind('/'))).ok());
  ASSERT_TRUE(WriteFile(to, *b).ok());
}

// Per thread (in tid order, which is creation order), the frames as
// "where+rel_pc method", where is "PROGRAM" for the fixture's own binary
// (whatever its directory) and the module path otherwise: comparable
// between two runs of the same program.
std::string Basename(const std::string& p) { return p.substr(p.rfind('/') + 1); }

// `unstripped`: the program before stripping, whose FDEs name a function.
std::vector<std::string> RelativeStacks(const UnwindOutput& out, const std::string& program,
                                        const std::string& unstripped) {
  // /proc/PID/maps names the program by its real path (runfiles are
  // symlinks): compare by file name, the same in every variant directory.
  const std::string base = Basename(program);
  std::vector<std::string> stacks;
  for (const auto& [tid, th] : out.threads) {
    std::vector<std::string> frames;
    for (const UnwindFrame& f : th.frames) {
      std::string where = Basename(f.module) == base ? "PROGRAM" : f.module;
      std::string at = absl::StrCat("+", f.rel_pc);
      uint64_t rel = 0;
      if (where == "PROGRAM" && f.method == "signal" && ParseHexPc(f.rel_pc, &rel)) {
        // Where a signal lands in a busy loop depends on the instant (each
        // variant is a process of its own): compare the function, named by
        // the unstripped program's FDE (readelf), not the instruction.
        absl::StatusOr<std::optional<std::pair<uint64_t, uint64_t>>> fde =
            FdeCovering(unstripped, rel);
        if (fde.ok() && !fde->has_value()) fde = FdeCovering(unstripped, rel, ".debug_frame");
        if (fde.ok() && fde->has_value()) {
          at = absl::StrFormat(" in [0x%x, 0x%x)", (*fde)->first, (*fde)->second);
        }
      }
      frames.push_back(absl::StrCat(where, at, " ", f.method));
    }
    stacks.push_back(absl::StrCat(absl::StrJoin(frames, " | "), " => ", th.stop));
  }
  return stacks;
}

struct LiveRun {
  UnwindOutput ours;
  std::vector<std::string> relative;
  ThreadFrames eu, gdb;
  SymbolNames names;
};

// Starts `path`, unwinds it with `args`, and (if asked) runs eu-stack
// (`eu_args` added) and gdb on the same process.
void RunLive(const std::string& path, const std::string& unstripped,
             const std::vector<std::string>& args, bool tools,
             const std::vector<std::string>& eu_args, LiveRun* run) {
  absl::StatusOr<RunningProgram> p = StartProgram(path);
  ASSERT_TRUE(p.ok()) << path << ": " << p.status();
  absl::StatusOr<UnwindOutput> ours = UnwindFrames(UnwindBinary(), p->pid(), args);
  ASSERT_TRUE(ours.ok()) << ours.status();
  run->ours = *ours;
  run->relative = RelativeStacks(*ours, path, unstripped);
  if (!tools) return;
  std::vector<std::string> argv = {"eu-stack", "-n", "0", "-p", absl::StrCat(p->pid())};
  argv.insert(argv.end(), eu_args.begin(), eu_args.end());
  absl::StatusOr<ToolOutput> eu = RunTool(argv, kToolTimeout);
  ASSERT_TRUE(eu.ok()) << eu.status();
  absl::StatusOr<ThreadFrames> eu_frames = ParseEuStackOutput(eu->stdout_text, &run->names);
  ASSERT_TRUE(eu_frames.ok()) << eu_frames.status() << "\n" << eu->stderr_text;
  run->eu = *eu_frames;
  absl::StatusOr<ThreadFrames> gdb = GdbFrames(p->pid());
  ASSERT_TRUE(gdb.ok()) << gdb.status();
  run->gdb = *gdb;
}

// The variant's stacks equal the unstripped binary's, thread by thread;
// tallies them under `case_name`.
void ExpectSameAsBase(const std::string& case_name, const LiveRun& base,
                      const LiveRun& variant) {
  ASSERT_EQ(base.relative.size(), variant.relative.size()) << case_name;
  int matched = 0;
  for (size_t i = 0; i < base.relative.size(); ++i) {
    EXPECT_EQ(variant.relative[i], base.relative[i]) << case_name << " thread #" << i;
    matched += variant.relative[i] == base.relative[i];
  }
  Tally()[case_name].first += base.relative.size();
  Tally()[case_name].second += matched;
}

void ExpectSameAsTools(const std::string& case_name, const LiveRun& run) {
  const ThreadFrames pcs = run.ours.Pcs();
  Comparison eu = CompareThreadFrames("unwind", pcs, "eu-stack", run.eu, &run.names);
  Comparison gdb = CompareThreadFrames("unwind", pcs, "gdb", run.gdb, &run.names);
  EXPECT_TRUE(eu.ok()) << case_name << "\n" << eu.diff;
  EXPECT_TRUE(gdb.ok()) << case_name << "\n" << gdb.diff;
  Tally()[case_name].first += eu.threads;
  Tally()[case_name].second += CountMatchedBoth(pcs, pcs, run.eu, run.gdb);
}

class LiveTest : public ::testing::TestWithParam<const char*> {};

TEST_P(LiveTest, EveryVariantUnwindsAsBeforeStripping) {
  const std::string name = GetParam();
  const std::vector<std::string> no_host = {"--debug-dir=/nonexistent", "--no-debuginfod"};
  LiveRun base;
  RunLive(BasePath(name), BasePath(name), no_host, true, {}, &base);
  ExpectSameAsTools("unstripped vs eu-stack and gdb", base);
  // The program's own frames used .debug_frame: what the variants must find.
  bool used_debug_frame = false;
  for (const std::string& s : base.relative) {
    used_debug_frame |= absl::StrContains(s, " debug_frame");
  }
  EXPECT_TRUE(used_debug_frame) << absl::StrJoin(base.relative, "\n");

  // Split: the debug file beside the binary (.gnu_debuglink). The tools
  // find it too.
  LiveRun split;
  RunLive(VariantPath("split", name), BasePath(name), no_host, true, {}, &split);
  ExpectSameAsBase("split debug file vs unstripped", base, split);
  ExpectSameAsTools("split debug file vs eu-stack and gdb", split);

  // Without its debug file the same binary cannot do as well: the check
  // above can fail.
  {
    std::string dir = NewTempDir("alone.");
    Copy(VariantPath("split", name), dir + "/" + name);
    LiveRun alone;
    RunLive(dir + "/" + name, BasePath(name), no_host, false, {}, &alone);
    EXPECT_NE(alone.relative, base.relative) << "stripped, no debug file";
  }

  // The debug file only in a build-id directory given with --debug-dir
  // (eu-stack: --debuginfo-path).
  {
    std::string dir = NewTempDir("buildid.");
    Copy(VariantPath("split", name), dir + "/bin/" + name);
    absl::StatusOr<std::string> id;
    {
      absl::StatusOr<ToolOutput> r =
          RunTool({"readelf", "-n", dir + "/bin/" + name}, kToolTimeout);
      ASSERT_TRUE(r.ok());
      size_t at = r->stdout_text.find("Build ID: ");
      ASSERT_NE(at, std::string::npos);
      id = r->stdout_text.substr(at + 10, 40);
    }
    Copy(VariantPath("split", name) + ".debug",
         absl::StrCat(dir, "/dbg/.build-id/", id->substr(0, 2), "/", id->substr(2), ".debug"));
    LiveRun by_id;
    RunLive(dir + "/bin/" + name, BasePath(name),
            {"--debug-dir=" + dir + "/dbg", "--no-debuginfod"}, true,
            {"--debuginfo-path=" + dir + "/dbg"}, &by_id);
    ExpectSameAsBase("build-id directory vs unstripped", base, by_id);
    // gdb is not told about the directory: eu-stack only.
    Comparison eu = CompareThreadFrames("unwind", by_id.ours.Pcs(), "eu-stack", by_id.eu,
                                        &by_id.names);
    EXPECT_TRUE(eu.ok()) << eu.diff;
    Tally()["build-id directory vs eu-stack"].first += eu.threads;
    Tally()["build-id directory vs eu-stack"].second += eu.matched;
  }

  // MiniDebugInfo with CFI, and compressed .debug_frame: against the
  // unstripped binary (libdwfl 0.188 takes no CFI from .gnu_debugdata and
  // no zstd sections, so eu-stack is no reference for these).
  for (const char* kind : {"mini", "zlib", "zstd", "zlib_gnu"}) {
    LiveRun v;
    RunLive(VariantPath(kind, name), BasePath(name), no_host, false, {}, &v);
    ExpectSameAsBase(absl::StrCat(kind, " vs unstripped"), base, v);
  }
}

INSTANTIATE_TEST_SUITE_P(Programs, LiveTest, ::testing::ValuesIn(kPrograms));

// A core whose executable (and its debug file) exist only on a debuginfod
// server gives the frames it gives with the files in place.
class CoreTest : public ::testing::TestWithParam<const char*> {};

TEST_P(CoreTest, FilesOnlyInDebuginfodGiveTheSameFrames) {
  const std::string name = GetParam();
  const std::string dir = NewTempDir("core.");
  const std::string app = dir + "/app/" + name;
  Copy(VariantPath("split", name), app);
  Copy(VariantPath("split", name) + ".debug", app + ".debug");
  std::string core;
  {
    absl::StatusOr<RunningProgram> p = StartProgram(app);
    ASSERT_TRUE(p.ok()) << p.status();
    absl::StatusOr<std::string> c = Gcore(p->pid(), dir + "/core");
    ASSERT_TRUE(c.ok()) << c.status();
    core = *c;
  }
  const std::vector<std::string> local = {"--debug-dir=/nonexistent", "--no-debuginfod"};
  absl::StatusOr<UnwindCoreResult> in_place = UnwindCoreFrames(UnwindBinary(), core, local);
  ASSERT_TRUE(in_place.ok()) << in_place.status();
  // With the files in place, as eu-stack --core sees them.
  SymbolNames names;
  absl::StatusOr<ThreadFrames> eu = EuStackCoreFrames(core, app, &names);
  ASSERT_TRUE(eu.ok()) << eu.status();
  Comparison c = CompareThreadFrames("unwind core", in_place->frames.Pcs(), "eu-stack --core",
                                     *eu, &names);
  EXPECT_TRUE(c.ok()) << c.diff;
  Tally()["core, files in place vs eu-stack --core"].first += c.threads;
  Tally()["core, files in place vs eu-stack --core"].second += c.matched;

  // Under --sysroot: the program and the libraries it ran with copied
  // there, the debug file only in the sysroot's /usr/lib/debug/.build-id
  // (the default debug directory, under the sysroot first).
  {
    const std::string sysroot = dir + "/sysroot";
    std::set<std::string> copied;
    for (const auto& [tid, th] : in_place->frames.threads) {
      for (const UnwindFrame& f : th.frames) {
        if (f.module.empty() || f.module[0] != '/' || !copied.insert(f.module).second) {
          continue;
        }
        Copy(f.module, sysroot + f.module);
      }
    }
    absl::StatusOr<ToolOutput> r = RunTool({"readelf", "-n", app}, kToolTimeout);
    ASSERT_TRUE(r.ok());
    const size_t at = r->stdout_text.find("Build ID: ");
    ASSERT_NE(at, std::string::npos);
    const std::string id = r->stdout_text.substr(at + 10, 40);
    Copy(app + ".debug", absl::StrCat(sysroot, "/usr/lib/debug/.build-id/", id.substr(0, 2),
                                      "/", id.substr(2), ".debug"));
    ASSERT_EQ(unlink((sysroot + app + ".debug").c_str()) == 0 || errno == ENOENT, true);
    absl::StatusOr<UnwindCoreResult> in_sysroot = UnwindCoreFrames(
        UnwindBinary(), core, {"--sysroot=" + sysroot, "--no-debuginfod"});
    ASSERT_TRUE(in_sysroot.ok()) << in_sysroot.status();
    Comparison same = CompareThreadFrames("files in place", in_place->frames.Pcs(),
                                          "--sysroot", in_sysroot->frames.Pcs(), &names);
    EXPECT_TRUE(same.ok()) << same.diff << "\n" << in_sysroot->errors;
    EXPECT_EQ(RelativeStacks(in_sysroot->frames, app, app), RelativeStacks(in_place->frames, app, app));
    Tally()["core, --sysroot with its debug directory vs files in place"].first += same.threads;
    Tally()["core, --sysroot with its debug directory vs files in place"].second += same.matched;
  }

  // Now the files are only on the server.
  ASSERT_EQ(rename((dir + "/app").c_str(), (dir + "/served").c_str()), 0);
  absl::StatusOr<std::unique_ptr<DebuginfodServer>> server =
      DebuginfodServer::Start(dir + "/served", 2);
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string cache = dir + "/cache";
  setenv("DEBUGINFOD_CACHE_PATH", cache.c_str(), 1);
  absl::StatusOr<UnwindCoreResult> missing = UnwindCoreFrames(UnwindBinary(), core, local);
  ASSERT_TRUE(missing.ok());
  EXPECT_NE(missing->frames.Pcs(), in_place->frames.Pcs()) << "the files are really gone";

  for (const char* run : {"cold", "warm"}) {
    absl::StatusOr<UnwindCoreResult> fetched = UnwindCoreFrames(
        UnwindBinary(), core,
        {"--debug-dir=/nonexistent", "--debuginfod=" + (*server)->url()});
    ASSERT_TRUE(fetched.ok()) << fetched.status();
    Comparison same = CompareThreadFrames("files in place", in_place->frames.Pcs(),
                                          "files from debuginfod", fetched->frames.Pcs(),
                                          &names);
    EXPECT_TRUE(same.ok()) << run << "\n" << same.diff << "\n" << fetched->errors;
    EXPECT_EQ(RelativeStacks(fetched->frames, app, app), RelativeStacks(in_place->frames, app, app))
        << run;
    const std::string key = absl::StrCat("core, files only in debuginfod (", run,
                                         ") vs files in place");
    Tally()[key].first += same.threads;
    Tally()[key].second += same.matched;
    // The JSON says where the files came from.
    EXPECT_TRUE(absl::StrContains(fetched->json, "/debuginfod_client/") ||
                absl::StrContains(fetched->json, cache))
        << fetched->json;
    EXPECT_TRUE(absl::StrContains(fetched->json, "\"fetched\": true")) << fetched->json;
    EXPECT_TRUE(absl::StrContains(fetched->json, "\"debug_fetched\": true")) << fetched->json;
    EXPECT_FALSE(absl::StrContains(fetched->errors, "not found")) << fetched->errors;
  }
  unsetenv("DEBUGINFOD_CACHE_PATH");
}

INSTANTIATE_TEST_SUITE_P(Programs, CoreTest, ::testing::ValuesIn(kPrograms));

}  // namespace
}  // namespace unwindd::harness
