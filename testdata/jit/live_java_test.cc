// A JVM (Debian's openjdk-17) run with -XX:+PreserveFramePointer: a Java
// thread spinning in C2-compiled code, which no file and no jitdump
// describes, is unwound by `unwind pid` through its compiled and
// interpreted frames (frame pointers in anonymous executable memory) into
// libjvm (JavaCalls::call_helper) and on to start_thread.
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "testdata/harness/json.h"
#include "testdata/harness/subprocess.h"
#include "testdata/harness/tools.h"

namespace unwindd {
namespace {

constexpr char kHot[] = R"(public class Hot {
  static long spin(long n) { long s = 0; for (long i = 0; i < n; i++) s += (i * i) ^ s; return s; }
  static long loop() { System.out.println("ready"); long t = 0; for (;;) t += spin(1000000); }
  static long rec(int d) { return d == 0 ? loop() : rec(d - 1) + 1; }
  public static void main(String[] a) { rec(10); }
}
)";

bool InJitCode(const harness::JsonValue& frame) {
  const harness::JsonValue* module = frame.Find("module");
  return module == nullptr || module->text().empty();
}

TEST(LiveJava, JitThreadReachesStartThread) {
  if (access("/usr/bin/java", X_OK) != 0 || access("/usr/bin/javac", X_OK) != 0) {
    GTEST_SKIP() << "no java/javac (openjdk-17-jdk-headless)";
  }
  const std::string dir = ::testing::TempDir() + "/live_java";
  ASSERT_EQ(system(("rm -rf '" + dir + "' && mkdir -p '" + dir + "'").c_str()), 0);
  std::ofstream(dir + "/Hot.java") << kHot;
  absl::StatusOr<harness::ToolOutput> javac =
      harness::RunTool({"javac", "-d", dir, dir + "/Hot.java"}, absl::Seconds(300));
  ASSERT_TRUE(javac.ok()) << javac.status();
  ASSERT_EQ(javac->exit_code, 0) << javac->stderr_text;
  const std::string sh = dir + "/run.sh";
  std::ofstream(sh) << "#!/bin/sh\nexec java -XX:+PreserveFramePointer -cp '" << dir
                    << "' Hot\n";
  chmod(sh.c_str(), 0755);
  absl::StatusOr<harness::RunningProgram> p =
      harness::StartProgram(sh, absl::Seconds(60), harness::Settle::kNo);
  ASSERT_TRUE(p.ok()) << p.status();
  // C2 compiles spin after some thousands of calls: give it time, then
  // look until a sample finds the thread in compiled code.
  usleep(3 * 1000 * 1000);
  int in_jit = 0, reached = 0;
  std::string last;
  for (int attempt = 0; attempt < 20 && in_jit < 5; ++attempt) {
    absl::StatusOr<harness::ToolOutput> run = harness::RunTool(
        {harness::RunfilesRoot() + "/service/unwind", "pid", absl::StrCat(p->pid()),
         "--format=json", "--symbols"},
        absl::Seconds(60));
    ASSERT_TRUE(run.ok()) << run.status();
    ASSERT_EQ(run->exit_code, 0) << run->stderr_text;
    absl::StatusOr<harness::JsonValue> doc = harness::ParseJson(run->stdout_text);
    ASSERT_TRUE(doc.ok()) << doc.status();
    for (const harness::JsonValue& t : doc->Find("threads")->elements()) {
      const harness::JsonValue* frames = t.Find("frames");
      if (frames == nullptr || frames->elements().empty() ||
          !InJitCode(frames->elements()[0])) {
        continue;
      }
      ++in_jit;
      bool call_helper = false, start_thread = false;
      for (const harness::JsonValue& f : frames->elements()) {
        const harness::JsonValue* sym = f.Find("symbol");
        if (sym == nullptr) continue;
        call_helper |= absl::StartsWith(sym->text(), "JavaCalls::call_helper");
        start_thread |= absl::StartsWith(sym->text(), "start_thread");
      }
      reached += call_helper && start_thread ? 1 : 0;
      last = run->stdout_text;
    }
    usleep(200 * 1000);
  }
  ASSERT_GE(in_jit, 1) << "the Java thread was never caught in compiled code";
  EXPECT_EQ(reached, in_jit) << last;
}

}  // namespace
}  // namespace unwindd
