// Debian's python3-grpcio as an independent client of the real unwindd
// (testing/snapshot_client.py, messages from protoc --python_out): it sends
// a fixture's mapping table once and then samples naming it, on both
// snapshot RPCs, and every sample's frames (pc, sp, method, module,
// build-id, rel_pc, file_offset) and stop must equal what `unwind pid
// --format=json` prints for the same parked threads.
#include <unistd.h>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "service/server/testing/capture.h"
#include "service/server/testing/server_fixture.h"
#include "testdata/harness/subprocess.h"
#include "testdata/harness/tools.h"

namespace unwindd::service {
namespace {

using testing::ServerProcess;
using testing::TempDir;

class PythonClientTest : public ::testing::TestWithParam<std::string> {};

TEST_P(PythonClientTest, TableSentOnceGivesTheClisFrames) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (captures ptrace fixtures)";
  TempDir dir;
  absl::StatusOr<std::unique_ptr<ServerProcess>> server =
      ServerProcess::Start(dir.path(), {});
  ASSERT_TRUE(server.ok()) << server.status();
  absl::StatusOr<harness::RunningProgram> program =
      harness::StartProgram(harness::FixturePath(GetParam()));
  ASSERT_TRUE(program.ok()) << program.status();
  const pid_t pid = program->pid();

  absl::StatusOr<harness::ToolOutput> cli = harness::RunTool(
      {testing::ServiceBinary("unwind"), "pid", absl::StrCat(pid), "--format=json"},
      absl::Seconds(60));
  ASSERT_TRUE(cli.ok()) << cli.status();
  ASSERT_EQ(cli->exit_code, 0) << cli->stderr_text;
  testing::CaptureOptions o;
  o.with_pid = false;  // the stack copies and the files only
  absl::StatusOr<std::vector<v1::SnapshotRequest>> samples =
      testing::CaptureSamples(pid, o);
  ASSERT_TRUE(samples.ok()) << samples.status();
  v1::SnapshotBatch captured;
  for (const v1::SnapshotRequest& r : *samples) *captured.add_samples() = r;
  const std::string samples_file = dir.path() + "/samples.bin";
  const std::string cli_file = dir.path() + "/cli.json";
  std::ofstream(samples_file, std::ios::binary) << captured.SerializeAsString();
  std::ofstream(cli_file) << cli->stdout_text;

  const std::string root = harness::RunfilesRoot();
  absl::StatusOr<harness::ToolOutput> client = harness::RunTool(
      {"/usr/bin/python3", root + "/service/server/testing/snapshot_client.py",
       "--socket=" + (*server)->socket_path(), "--samples=" + samples_file,
       "--cli-json=" + cli_file, "--pb2-dir=" + root + "/service/server/python"},
      absl::Seconds(120));
  ASSERT_TRUE(client.ok()) << client.status();
  EXPECT_EQ(client->exit_code, 0) << client->stderr_text;
  EXPECT_TRUE(absl::StrContains(
      client->stdout_text, absl::StrCat("matched ", samples->size(), " threads")))
      << client->stdout_text << client->stderr_text;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, PythonClientTest,
                         ::testing::Values("threads_c_O2_nofp_pie", "demo_O0_fp_pie",
                                           "cxx_catch_O2_nofp_pie"));

}  // namespace
}  // namespace unwindd::service
