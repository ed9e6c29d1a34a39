// Go's stack switches on a real Go program (Debian's golang-go), live and
// in a gcore core: a thread that went through runtime.mcall (the main
// thread parked by time.Sleep runs the scheduler on g0 from mcall) ends
// its frames there, with stop end_of_stack and a detail naming the
// switch, instead of reading two junk frames from the goroutine's stack.
// Go's own traceback stops at the same functions (funcFlag_SPWRITE).
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "testdata/harness/json.h"
#include "testdata/harness/subprocess.h"
#include "testdata/harness/tools.h"

namespace unwindd {
namespace {

constexpr char kProgram[] = R"(package main

import (
	"fmt"
	"os"
	"time"
)

func park(ch chan int) { <-ch }

func main() {
	ch := make(chan int)
	for i := 0; i < 4; i++ {
		go park(ch)
	}
	fmt.Println("ready")
	os.Stdout.Sync()
	time.Sleep(time.Hour)
}
)";

const std::vector<std::string> kSwitches = {
    "runtime.mcall",       "runtime.morestack",          "runtime.morestack_noctxt",
    "runtime.systemstack", "runtime.systemstack_switch", "runtime.gogo",
    "runtime.asmcgocall",  "runtime.asmcgocall_no_g",    "runtime.cgocallback"};

bool IsSwitch(const std::string& symbol) {
  for (const std::string& s : kSwitches) {
    if (symbol == s || absl::StartsWith(symbol, s + "+")) return true;
  }
  return false;
}

// Checks `unwind ... --format=json --symbols` output; returns how many
// threads ended at a switch.
int CheckThreads(const std::string& json, const std::string& what) {
  absl::StatusOr<harness::JsonValue> doc = harness::ParseJson(json);
  EXPECT_TRUE(doc.ok()) << doc.status();
  if (!doc.ok()) return 0;
  int ended = 0;
  const harness::JsonValue* threads = doc->Find("threads");
  if (threads == nullptr) {
    ADD_FAILURE() << what << ": no threads";
    return 0;
  }
  for (const harness::JsonValue& t : threads->elements()) {
    const harness::JsonValue* frames = t.Find("frames");
    if (frames == nullptr) continue;
    const std::vector<harness::JsonValue>& f = frames->elements();
    for (size_t i = 1; i < f.size(); ++i) {
      const harness::JsonValue* sym = f[i].Find("symbol");
      if (sym == nullptr || !IsSwitch(sym->text())) continue;
      EXPECT_EQ(i + 1, f.size()) << what << ": frames after " << sym->text() << "\n" << json;
      EXPECT_EQ(t.Find("stop")->text(), "end_of_stack") << what;
      const harness::JsonValue* detail = t.Find("stop_detail");
      EXPECT_TRUE(detail != nullptr && absl::StrContains(detail->text(), "Go stack switch"))
          << what;
      ++ended;
      break;
    }
  }
  return ended;
}

TEST(GoStackSwitch, LiveAndCoreStopAtTheSwitch) {
  if (access("/usr/bin/go", X_OK) != 0) GTEST_SKIP() << "no go (golang-go)";
  const std::string dir = ::testing::TempDir() + "/go_switch";
  ASSERT_EQ(system(("rm -rf '" + dir + "' && mkdir -p '" + dir + "'").c_str()), 0);
  std::ofstream(dir + "/main.go") << kProgram;
  absl::StatusOr<harness::ToolOutput> build = harness::RunTool(
      {"env", "GOCACHE=" + dir + "/cache", "GOPATH=" + dir + "/gopath", "GO111MODULE=off",
       "HOME=" + dir, "go", "build", "-o", dir + "/parked", dir + "/main.go"},
      absl::Seconds(300));
  ASSERT_TRUE(build.ok()) << build.status();
  ASSERT_EQ(build->exit_code, 0) << build->stderr_text;

  absl::StatusOr<harness::RunningProgram> p =
      harness::StartProgram(dir + "/parked", absl::Seconds(30));
  ASSERT_TRUE(p.ok()) << p.status();
  const std::string unwind = harness::RunfilesRoot() + "/service/unwind";
  absl::StatusOr<harness::ToolOutput> live = harness::RunTool(
      {unwind, "pid", absl::StrCat(p->pid()), "--format=json", "--symbols"}, absl::Seconds(60));
  ASSERT_TRUE(live.ok()) << live.status();
  ASSERT_EQ(live->exit_code, 0) << live->stderr_text;
  EXPECT_GE(CheckThreads(live->stdout_text, "live"), 1) << live->stdout_text;

  // A core of it (gdb's gcore), unwound from the file.
  const std::string core = dir + "/core";
  absl::StatusOr<harness::ToolOutput> gcore = harness::RunTool(
      {"gcore", "-o", core, absl::StrCat(p->pid())}, absl::Seconds(120));
  ASSERT_TRUE(gcore.ok()) << gcore.status();
  ASSERT_EQ(gcore->exit_code, 0) << gcore->stderr_text;
  absl::StatusOr<harness::ToolOutput> post = harness::RunTool(
      {unwind, "core", absl::StrCat(core, ".", p->pid()), "--format=json", "--symbols"},
      absl::Seconds(60));
  ASSERT_TRUE(post.ok()) << post.status();
  ASSERT_EQ(post->exit_code, 0) << post->stderr_text;
  EXPECT_GE(CheckThreads(post->stdout_text, "core"), 1) << post->stdout_text;
}

}  // namespace
}  // namespace unwindd
