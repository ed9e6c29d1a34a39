#include "testdata/harness/subprocess.h"

#include "gtest/gtest.h"

namespace unwindd::harness {
namespace {

TEST(RunToolTest, CollectsOutputAndExitCode) {
  absl::StatusOr<ToolOutput> out = RunTool(
      {"sh", "-c", "echo out; echo err >&2; exit 3"}, absl::Seconds(10));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->exit_code, 3);
  EXPECT_EQ(out->stdout_text, "out\n");
  EXPECT_EQ(out->stderr_text, "err\n");
}

TEST(RunToolTest, ReportsDeathBySignal) {
  absl::StatusOr<ToolOutput> out =
      RunTool({"sh", "-c", "kill -9 $$"}, absl::Seconds(10));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->exit_code, 128 + 9);
}

TEST(RunToolTest, KillsToolsPastTheDeadline) {
  const absl::Time start = absl::Now();
  absl::StatusOr<ToolOutput> out =
      RunTool({"sleep", "30"}, absl::Milliseconds(200));
  EXPECT_EQ(out.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
}

TEST(RunToolTest, MissingToolIsNotFound) {
  absl::StatusOr<ToolOutput> out =
      RunTool({"/nonexistent/tool"}, absl::Seconds(10));
  EXPECT_EQ(out.status().code(), absl::StatusCode::kNotFound);
}

TEST(StartProgramTest, RejectsAProgramThatIsNotAFixture) {
  // `true` exits without a ready line.
  absl::StatusOr<RunningProgram> p = StartProgram("true", absl::Seconds(10));
  EXPECT_EQ(p.status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace unwindd::harness
