// perf_replay against the real unwindd on a recording made here and now
// (`perf record -e cpu-clock --call-graph dwarf` of the CPU-bound fixture),
// so that the replay tool the corpus's server column depends on cannot
// rot: every sample must be answered, in order, without error, with the
// frames of an in-process unwind (--check). And the check must be able to
// fail: against a server that stops every walk after two frames, the same
// replay must exit 1 and say which sample differs.
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "proc/perf/testing/recording.h"
#include "service/server/testing/server_fixture.h"
#include "testdata/harness/subprocess.h"
#include "testdata/harness/tools.h"

namespace unwindd {
namespace {

using proc::perf::testing::BuildIdDir;
using service::testing::ServerProcess;

// The value of `key` in perf_replay's "result k=v ..." line, or -1.
double Result(const std::string& out, const std::string& key) {
  for (absl::string_view line : absl::StrSplit(out, '\n')) {
    if (!absl::ConsumePrefix(&line, "result ")) continue;
    for (absl::string_view kv : absl::StrSplit(line, ' ')) {
      double v = 0;
      if (absl::ConsumePrefix(&kv, key + "=") && absl::SimpleAtod(kv, &v)) return v;
    }
  }
  return -1;
}

class PerfReplayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string reason = proc::perf::testing::CannotRecordReason();
    if (!reason.empty()) GTEST_SKIP() << reason;
    dir_ = ::testing::TempDir();
    absl::StatusOr<std::string> data = proc::perf::testing::RecordWithPerf(
        {harness::FixturePath("perf/perf_busy_O2_nofp_pie")}, dir_, "replay",
        proc::perf::testing::Mode::kFile, absl::Seconds(1));
    ASSERT_TRUE(data.ok()) << data.status();
    data_ = *data;
  }

  // perf_replay on the recording against `server`, one pass, checked.
  harness::ToolOutput Replay(const ServerProcess& server) {
    absl::StatusOr<harness::ToolOutput> out = harness::RunTool(
        {absl::StrCat(harness::RunfilesRoot(), "/testdata/bench/perf_replay"),
         "--server=" + server.address(), "--check", "--passes=1", "--warmup=0",
         "--batch=16", "--window=64", "--buildid-dir=" + BuildIdDir(dir_), data_},
        absl::Seconds(120));
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? *out : harness::ToolOutput{-1, "", ""};
  }

  std::string dir_;
  std::string data_;
};

TEST_F(PerfReplayTest, EveryAnswerIsTheInProcessUnwind) {
  service::testing::TempDir sock;
  absl::StatusOr<std::unique_ptr<ServerProcess>> server =
      ServerProcess::Start(sock.path(), {"--request-log=none"});
  ASSERT_TRUE(server.ok()) << server.status();
  harness::ToolOutput out = Replay(**server);
  ASSERT_EQ(out.exit_code, 0) << out.stdout_text << out.stderr_text;
  // A second of a busy program: hundreds of samples, through libc
  // callbacks, recursion and a signal handler.
  EXPECT_GE(Result(out.stdout_text, "samples"), 100) << out.stdout_text;
  EXPECT_GE(Result(out.stdout_text, "frames_per_sample"), 5) << out.stdout_text;
  EXPECT_GT(Result(out.stdout_text, "stack_bytes_per_sample"), 1000) << out.stdout_text;
  EXPECT_GT(Result(out.stdout_text, "samples_per_server_cpu_s"), 0) << out.stdout_text;
  EXPECT_TRUE(absl::StrContains(out.stdout_text,
                                "every sample's frames equal to the in-process unwind"))
      << out.stdout_text;
  EXPECT_EQ((*server)->Terminate(), 0);
}

TEST_F(PerfReplayTest, FramesThatDifferFail) {
  service::testing::TempDir sock;
  absl::StatusOr<std::unique_ptr<ServerProcess>> server =
      ServerProcess::Start(sock.path(), {"--request-log=none", "--max-frames=2"});
  ASSERT_TRUE(server.ok()) << server.status();
  harness::ToolOutput out = Replay(**server);
  EXPECT_EQ(out.exit_code, 1) << out.stdout_text << out.stderr_text;
  EXPECT_TRUE(absl::StrContains(out.stderr_text, "frames differ from the in-process"))
      << out.stderr_text;
  EXPECT_EQ(Result(out.stdout_text, "samples"), -1) << out.stdout_text;
}

}  // namespace
}  // namespace unwindd
