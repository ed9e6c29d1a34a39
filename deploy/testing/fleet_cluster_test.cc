// The one-machine cluster test (fleet_cluster.py, docs/fleet.md): captures
// a fixture's samples for the snapshot clients and its core (zstd) for the
// core clients, its executable then gone; then runs three unwindd
// replicas, debuginfod and nginx under load, with a SIGTERM, a restart and
// a SIGKILL, and requires every check of the script to pass.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
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

TEST(FleetClusterTest, ReplicasBehindRoundRobinAndNginxLoseNoRequest) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (captures a ptrace fixture)";
  for (const char* tool : {"/usr/sbin/nginx", "/usr/bin/debuginfod", "/usr/bin/openssl",
                           "/usr/bin/gcore", "/usr/bin/zstd"}) {
    ASSERT_EQ(access(tool, X_OK), 0) << tool << " missing: run scripts/deps.sh";
  }
  testing::TempDir dir;
  // The program runs from a copy that is gone once its core is made, as
  // on a crashed host: the replicas must fetch it from debuginfod by
  // build-id (debuginfod indexes another copy).
  const std::string bin = dir.path() + "/bin";
  const std::string exe = bin + "/threads_c";
  const std::string store_exe = dir.path() + "/threads_c";
  ASSERT_EQ(mkdir(bin.c_str(), 0755), 0);
  ASSERT_TRUE(testing::CopyFile(harness::FixturePath("threads_c_O2_nofp_pie"), exe, 0755));
  ASSERT_TRUE(testing::CopyFile(exe, store_exe, 0755));
  absl::StatusOr<harness::RunningProgram> program = harness::StartProgram(exe);
  ASSERT_TRUE(program.ok()) << program.status();
  testing::CaptureOptions o;
  o.with_pid = false;  // unwound from their bytes and files, on any replica
  absl::StatusOr<std::vector<v1::SnapshotRequest>> samples =
      testing::CaptureSamples(program->pid(), o);
  ASSERT_TRUE(samples.ok()) << samples.status();
  v1::SnapshotBatch captured;
  for (v1::SnapshotRequest r : *samples) {
    r.set_debuginfod(true);  // its executable, by build-id
    *captured.add_samples() = r;
  }
  const std::string samples_file = dir.path() + "/samples.bin";
  std::ofstream(samples_file, std::ios::binary) << captured.SerializeAsString();
  // A compressed core, as crash pipelines send them.
  const std::string core = absl::StrCat(dir.path(), "/core.", program->pid());
  absl::StatusOr<harness::ToolOutput> g = harness::RunTool(
      {"gcore", "-o", dir.path() + "/core", absl::StrCat(program->pid())}, absl::Seconds(120));
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_EQ(access(core.c_str(), R_OK), 0) << g->stderr_text;
  absl::StatusOr<harness::ToolOutput> z =
      harness::RunTool({"zstd", "-q", "--rm", core}, absl::Seconds(120));
  ASSERT_TRUE(z.ok() && z->exit_code == 0);
  ASSERT_EQ(unlink(exe.c_str()), 0);

  const std::string root = harness::RunfilesRoot();
  // UNWINDD_SOAK_SECONDS=600 (bazel test --test_env=...): the soak instead
  // of the phases (docs/fleet.md "Soak"); not in CI.
  const char* soak = getenv("UNWINDD_SOAK_SECONDS");
  const int soak_seconds = soak != nullptr ? atoi(soak) : 0;
  absl::StatusOr<harness::ToolOutput> run = harness::RunTool(
      {"/usr/bin/python3", root + "/deploy/testing/fleet_cluster.py",
       absl::StrCat("--soak-seconds=", soak_seconds),
       // The soak rotates connections every 30 s unless
       // UNWINDD_SOAK_CONNECTION_AGE says otherwise (the phases: 3 s).
       absl::StrCat("--connection-age=",
                    soak_seconds == 0 ? 3
                    : getenv("UNWINDD_SOAK_CONNECTION_AGE") != nullptr
                        ? atoi(getenv("UNWINDD_SOAK_CONNECTION_AGE"))
                        : 30),
       "--unwindd=" + testing::UnwinddBinary(),
       "--core=" + core + ".zst", "--exe=" + store_exe,
       "--samples=" + samples_file,
       "--pb2-dir=" + root + "/service/server/python",
       "--nginx-conf=" + root + "/deploy/nginx/unwindd.conf",
       "--make-certs=" + root + "/service/server/testing/make_tls_certs.sh",
       "--workdir=" + dir.path() + "/cluster"},
      absl::Seconds(400 + soak_seconds));
  ASSERT_TRUE(run.ok()) << run.status();
  // Its figures, in the test log (docs/fleet.md quotes them).
  std::fputs(run->stdout_text.c_str(), stdout);
  EXPECT_EQ(run->exit_code, 0) << run->stdout_text << run->stderr_text;
  EXPECT_TRUE(absl::StrContains(run->stdout_text, " 0 failed")) << run->stdout_text;
}

}  // namespace
}  // namespace unwindd::service
