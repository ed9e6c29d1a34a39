// Authorization, end to end: a real unwindd, and a client run as uid 65534
// (setpriv --reuid=65534 --regid=65534 --clear-groups) against a
// root-owned fixture and one owned by 65534. The socket is mode 0660 group
// nogroup, so 65534 may connect and other users may not.
//
// Binaries and fixtures are copied to a /tmp directory first: Bazel's
// runfiles live under /root, which uid 65534 cannot enter.
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "service/server/testing/server_fixture.h"
#include "testdata/harness/subprocess.h"
#include "testdata/harness/tools.h"

namespace unwindd::service {
namespace {

using testing::ServerProcess;
using testing::TempDir;

constexpr char kFixture[] = "threads_c_O2_nofp_pie";

bool Copy(const std::string& from, const std::string& to, mode_t mode) {
  std::ifstream in(from, std::ios::binary);
  std::ofstream out(to, std::ios::binary);
  out << in.rdbuf();
  out.close();
  return in.good() && out.good() && chmod(to.c_str(), mode) == 0;
}

std::vector<std::string> AsUser(int uid, std::vector<std::string> argv) {
  std::vector<std::string> out = {"setpriv", absl::StrCat("--reuid=", uid),
                                  absl::StrCat("--regid=", uid), "--clear-groups"};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

class AuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root to run clients as uid 65534";
    if (access("/usr/bin/setpriv", X_OK) != 0) GTEST_SKIP() << "needs setpriv";
    absl::StatusOr<std::unique_ptr<ServerProcess>> s =
        ServerProcess::Start(dir_.path(), {"--socket-group=nogroup"});
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = *std::move(s);
    client_ = dir_.path() + "/test_client";
    ASSERT_TRUE(Copy(testing::ServerTestBinary("test_client"), client_, 0755));
    fixture_ = dir_.path() + "/fixture";
    ASSERT_TRUE(Copy(harness::FixturePath(kFixture), fixture_, 0755));
  }

  // The client's one line, run as `uid` (0: as root, no setpriv).
  std::string Client(int uid, const std::string& what, const std::string& arg) {
    std::vector<std::string> argv = {client_, server_->address(), what, arg};
    if (uid != 0) argv = AsUser(uid, argv);
    absl::StatusOr<harness::ToolOutput> out = harness::RunTool(argv, absl::Seconds(60));
    EXPECT_TRUE(out.ok()) << out.status();
    if (!out.ok()) return "";
    EXPECT_EQ(out->exit_code, 0) << out->stderr_text;
    return out->stdout_text;
  }

  // The fixture, owned by `uid`.
  harness::RunningProgram Start(int uid) {
    std::string path = fixture_;
    if (uid != 0) {
      path = absl::StrCat(dir_.path(), "/as_", uid, ".sh");
      std::ofstream script(path);
      script << "#!/bin/sh\nexec setpriv --reuid=" << uid << " --regid=" << uid
             << " --clear-groups " << fixture_ << "\n";
      script.close();
      chmod(path.c_str(), 0755);
    }
    absl::StatusOr<harness::RunningProgram> p = harness::StartProgram(path);
    EXPECT_TRUE(p.ok()) << p.status();
    return std::move(*p);
  }

  TempDir dir_;
  std::unique_ptr<ServerProcess> server_;
  std::string client_;
  std::string fixture_;
};

TEST_F(AuthTest, NobodyMayUnwindOnlyItsOwnProcesses) {
  harness::RunningProgram root_owned = Start(0);
  harness::RunningProgram nobody_owned = Start(65534);
  std::string root_pid = absl::StrCat(root_owned.pid());
  std::string nobody_pid = absl::StrCat(nobody_owned.pid());

  EXPECT_EQ(Client(65534, "process", root_pid), "PERMISSION_DENIED frames=0\n");
  std::string own = Client(65534, "process", nobody_pid);
  EXPECT_TRUE(absl::StartsWith(own, "OK frames=")) << own;
  EXPECT_NE(own, "OK frames=0\n");
  // Root may unwind anyone's.
  EXPECT_TRUE(absl::StartsWith(Client(0, "process", nobody_pid), "OK frames="));
  EXPECT_TRUE(absl::StartsWith(Client(0, "process", root_pid), "OK frames="));

  // A snapshot naming a pid (and no mappings) needs the same right, since
  // the server would read that process's maps and memory.
  EXPECT_EQ(Client(65534, "snapshot", root_pid), "PERMISSION_DENIED frames=0\n");
  EXPECT_EQ(Client(65534, "snapshot", nobody_pid), "OK frames=1\n");

  for (int tracer : testing::TracerPids(root_owned.pid())) EXPECT_EQ(tracer, 0);
  for (int tracer : testing::TracerPids(nobody_owned.pid())) EXPECT_EQ(tracer, 0);
  std::string log = server_->RequestLog();
  EXPECT_NE(log.find(absl::StrCat("\"caller\": \"uid=65534\", \"target\": \"pid ",
                                  root_pid, "\", \"status\": \"PERMISSION_DENIED\"")),
            std::string::npos)
      << log;
}

// Files named in a request are opened with the caller's identity: a core
// path nobody may read is refused, whatever the server itself could read.
TEST_F(AuthTest, FilesAreOpenedAsTheCaller) {
  std::string secret = dir_.path() + "/secret.core";
  ASSERT_TRUE(Copy(fixture_, secret, 0600));
  EXPECT_EQ(Client(65534, "core", secret), "PERMISSION_DENIED frames=0\n");
  std::string hidden_dir = dir_.path() + "/private";
  ASSERT_EQ(mkdir(hidden_dir.c_str(), 0700), 0);
  ASSERT_TRUE(Copy(fixture_, hidden_dir + "/readable", 0644));
  EXPECT_EQ(Client(65534, "core", hidden_dir + "/readable"),
            "PERMISSION_DENIED frames=0\n");
  // Root gets past the open (and then is told the file is not a core).
  EXPECT_NE(Client(0, "core", secret), "PERMISSION_DENIED frames=0\n");
}

// Mode 0660 group nogroup: a user in neither cannot even connect.
TEST_F(AuthTest, OtherUsersCannotConnect) {
  harness::RunningProgram nobody_owned = Start(65534);
  EXPECT_EQ(Client(65533, "process", absl::StrCat(nobody_owned.pid())),
            "UNAVAILABLE frames=0\n");
  struct stat st;
  ASSERT_EQ(stat(server_->socket_path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0660u);
  EXPECT_EQ(st.st_gid, 65534u);
}

}  // namespace
}  // namespace unwindd::service
