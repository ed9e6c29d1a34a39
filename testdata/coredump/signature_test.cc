// Crash signatures (docs/crash-pipelines.md "Signatures") are the same for
// the same crash: across runs (and so across ASLR's load addresses), for a
// program installed at another path ("another machine"), for its core
// read here with a --sysroot, and for the minidump written from it. The
// crasher fixture crashes twice, from two install paths; each core is
// unwound, and the duphash is also recomputed here from the
// core_backtrace JSON by satyr's rule, with coreutils' sha1sum.
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"
#include "testdata/core/core_tools.h"
#include "testdata/harness/json.h"
#include "testdata/harness/subprocess.h"
#include "testdata/harness/tools.h"

namespace unwindd::harness {
namespace {

namespace fs = std::filesystem;

std::string Unwind() { return RunfilesRoot() + "/service/unwind"; }

struct CrashRun {
  std::string core;
  std::string exe;
  std::vector<std::string> libs;  // what it mapped besides the executable
};

// The crasher run from `exe` (a copy), crashed; its core.
absl::StatusOr<CrashRun> CrashAt(const std::string& exe, const std::string& cwd) {
  fs::create_directories(fs::path(exe).parent_path());
  fs::create_directories(cwd);
  fs::copy_file(RunfilesRoot() + "/testdata/coredump/crasher", exe);
  if (chdir(cwd.c_str()) != 0) return absl::InternalError("chdir");
  absl::StatusOr<RunningProgram> p = StartProgram(exe);
  if (!p.ok()) return p.status();
  CrashRun run;
  run.exe = exe;
  std::ifstream maps(absl::StrCat("/proc/", p->pid(), "/maps"));
  for (std::string line; std::getline(maps, line);) {
    const size_t slash = line.find('/');
    if (slash == std::string::npos) continue;
    const std::string path = line.substr(slash);
    if (path != exe && std::find(run.libs.begin(), run.libs.end(), path) == run.libs.end()) {
      run.libs.push_back(path);
    }
  }
  absl::StatusOr<std::string> core = CrashAndFindKernelCore(*p, SIGUSR1, cwd);
  if (absl::IsFailedPrecondition(core.status())) core = Gcore(p->pid(), cwd + "/gcore");
  if (!core.ok()) return core.status();
  run.core = *core;
  return run;
}

struct Output {
  std::string duphash;
  uint64_t frame0 = 0;  // the crashing thread's PC
  JsonValue doc = JsonValue::Null();
};

absl::StatusOr<Output> Signature(const std::vector<std::string>& argv) {
  absl::StatusOr<ToolOutput> out = RunTool(argv, absl::Seconds(120));
  if (!out.ok()) return out.status();
  if (out->exit_code != 0) return absl::InternalError(out->stderr_text);
  absl::StatusOr<JsonValue> doc = ParseJson(out->stdout_text);
  if (!doc.ok()) return doc.status();
  Output o;
  const JsonValue* sig = doc->Find("signature");
  if (sig != nullptr) {
    o.duphash = sig->Find("duphash")->text();
    const int64_t tid = sig->Find("crash_thread")->AsInt64().value_or(0);
    for (const JsonValue& t : doc->Find("threads")->elements()) {
      if (t.Find("tid")->AsInt64() == tid) {
        ParseHexPc(t.Find("frames")->elements()[0].Find("pc")->text(), &o.frame0);
      }
    }
  } else {
    o.duphash = doc->Find("duphash")->text();  // core_backtrace
  }
  o.doc = *std::move(doc);
  return o;
}

// satyr's duphash recomputed from a core_backtrace document: "Thread\n"
// and the crash thread's first three frames with a build-id, each
// "BUILDID+0xOFFSET\n", through sha1sum.
std::string DuphashBySha1sum(const JsonValue& core_backtrace, const std::string& dir) {
  std::string text = "Thread\n";
  int n = 0;
  for (const JsonValue& t : core_backtrace.Find("stacktrace")->elements()) {
    if (t.Find("crash_thread") == nullptr) continue;
    for (const JsonValue& f : t.Find("frames")->elements()) {
      if (n == 3 || f.Find("build_id") == nullptr) continue;
      absl::StrAppendFormat(&text, "%s+0x%x\n", f.Find("build_id")->text(),
                            f.Find("build_id_offset")->AsInt64().value_or(-1));
      ++n;
    }
  }
  const std::string file = dir + "/duphash.txt";
  std::ofstream(file) << text;
  absl::StatusOr<ToolOutput> sum = RunTool({"sha1sum", file}, absl::Seconds(10));
  if (!sum.ok() || sum->exit_code != 0) return "sha1sum failed";
  return sum->stdout_text.substr(0, 40);
}

TEST(SignatureTest, SameCrashSameSignatureAcrossRunsAslrPathsSysrootsAndMinidumps) {
  struct rlimit unlimited = {RLIM_INFINITY, RLIM_INFINITY};
  setrlimit(RLIMIT_CORE, &unlimited);
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string dir = absl::StrCat(tmp ? tmp : "/tmp", "/signature_test");
  fs::remove_all(dir);
  // Two "machines": the same build installed at two paths.
  absl::StatusOr<CrashRun> a = CrashAt(dir + "/a/usr/bin/crasher", dir + "/a/cwd");
  ASSERT_TRUE(a.ok()) << a.status();
  absl::StatusOr<CrashRun> b = CrashAt(dir + "/b/opt/app/bin/crasher", dir + "/b/cwd");
  ASSERT_TRUE(b.ok()) << b.status();

  absl::StatusOr<Output> sa = Signature({Unwind(), "core", a->core, "--format=json"});
  ASSERT_TRUE(sa.ok()) << sa.status();
  absl::StatusOr<Output> sb = Signature({Unwind(), "core", b->core, "--format=json"});
  ASSERT_TRUE(sb.ok()) << sb.status();
  ASSERT_EQ(sa->duphash.size(), 40u);
  EXPECT_EQ(sa->duphash, sb->duphash);
  // Two runs, two load addresses (unless ASLR is off on this machine).
  std::ifstream aslr("/proc/sys/kernel/randomize_va_space");
  int randomize = 0;
  aslr >> randomize;
  if (randomize != 0) {
    EXPECT_NE(sa->frame0, sb->frame0) << "same load address twice";
  }

  // Run a's files moved to a sysroot: the core's recorded paths are not
  // on this machine any more.
  const std::string sysroot = dir + "/sysroot";
  fs::create_directories(sysroot + "/usr/bin");
  fs::rename(a->exe, sysroot + "/usr/bin/crasher");
  fs::remove_all(dir + "/a/usr");
  for (const std::string& lib : a->libs) {
    fs::create_directories(fs::path(sysroot + lib).parent_path());
    if (!fs::exists(sysroot + lib)) fs::copy_file(lib, sysroot + lib);
  }
  absl::StatusOr<Output> from_sysroot = Signature(
      {Unwind(), "core", a->core, "--format=json", "--sysroot=" + sysroot,
       "--exe=" + sysroot + "/usr/bin/crasher"});
  ASSERT_TRUE(from_sysroot.ok()) << from_sysroot.status();
  EXPECT_EQ(from_sysroot->duphash, sa->duphash);

  // core_backtrace: the same duphash, which sha1sum agrees with.
  absl::StatusOr<Output> bt = Signature({Unwind(), "core", b->core, "--format=core-backtrace"});
  ASSERT_TRUE(bt.ok()) << bt.status();
  EXPECT_EQ(bt->duphash, sa->duphash);
  EXPECT_EQ(DuphashBySha1sum(bt->doc, dir), sa->duphash);

  // The minidump written from core b.
  const std::string md = dir + "/b.dmp";
  absl::StatusOr<ToolOutput> w =
      RunTool({Unwind(), "core", b->core, "--minidump=" + md}, absl::Seconds(120));
  ASSERT_TRUE(w.ok() && w->exit_code == 0) << (w.ok() ? w->stderr_text : "");
  absl::StatusOr<Output> from_md = Signature({Unwind(), "minidump", md, "--format=json"});
  ASSERT_TRUE(from_md.ok()) << from_md.status();
  EXPECT_EQ(from_md->duphash, sa->duphash);
  std::cout << "signature " << sa->duphash << " for runs at 0x" << std::hex << sa->frame0
            << " and 0x" << sb->frame0 << ", a sysroot and a minidump\n";
  fs::remove_all(dir);
}

}  // namespace
}  // namespace unwindd::harness
