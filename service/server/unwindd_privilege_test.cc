// Least privilege, end to end: unwindd run the way systemd/unwindd.service
// runs it, without systemd. The test binds the socket itself (as
// unwindd.socket would: root, group "unwindd", 0660) and passes it as fd 3
// with LISTEN_PID/LISTEN_FDS; setpriv switches to throwaway numeric ids and
// gives exactly the unit's AmbientCapabilities/CapabilityBoundingSet (read
// from the unit file) with no-new-privs. Then: what each capability makes
// work, what callers still cannot get, and unwindd's own /proc status.
//
// Binaries and fixtures are copied to a /tmp directory: Bazel's runfiles
// live under /root, which the other uids cannot enter.
#include <dirent.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"
#include "grpcpp/grpcpp.h"
#include "proto/unwinder.grpc.pb.h"
#include "service/server/capabilities.h"
#include "service/server/testing/server_fixture.h"
#include "testdata/harness/subprocess.h"
#include "testdata/harness/tools.h"

namespace unwindd::service {
namespace {

using testing::ServerTestBinary;
using testing::TempDir;

constexpr char kFixture[] = "threads_c_O2_nofp_pie";
// Throwaway numeric ids, no /etc/passwd entries needed: unwindd's user and
// group (also the socket's group), the owner of the unwound processes, and
// a third user. Both callers are in group kDaemon, as the unit's socket
// wants its callers to be.
constexpr int kDaemon = 64990;
constexpr int kOwner = 64991;
constexpr int kOther = 64992;

using testing::CopyFile;
using testing::ReadFile;

std::string UnitPath(const std::string& name) {
  return ServerTestBinary(absl::StrCat("systemd/", name));
}

// Every value of `key` in a unit file, split at whitespace.
std::vector<std::string> UnitValues(const std::string& unit, absl::string_view key) {
  std::vector<std::string> out;
  for (absl::string_view line : absl::StrSplit(unit, '\n')) {
    if (!absl::ConsumePrefix(&line, key) || !absl::ConsumePrefix(&line, "=")) continue;
    for (absl::string_view v : absl::StrSplit(line, ' ', absl::SkipEmpty())) {
      out.push_back(std::string(v));
    }
  }
  return out;
}

// "CAP_SYS_PTRACE ..." as setpriv takes it: "-all,+sys_ptrace,...".
std::string SetprivCaps(const std::vector<std::string>& caps) {
  std::string out = "-all";
  for (const std::string& c : caps) {
    absl::StrAppend(&out, ",+", absl::AsciiStrToLower(absl::StripPrefix(c, "CAP_")));
  }
  return out;
}

CapabilityMask MaskOf(const std::vector<std::string>& caps) {
  CapabilityMask m = 0;
  for (const std::string& c : caps) {
    for (int bit = 0; bit < 64; ++bit) {
      if (CapabilityNames(CapabilityBit(bit)) == absl::AsciiStrToLower(c)) {
        m |= CapabilityBit(bit);
      }
    }
  }
  return m;
}

// A line of /proc/PID/status, e.g. "Uid" -> "64990\t64990\t64990\t64990".
std::string StatusField(const std::string& status, absl::string_view key) {
  for (absl::string_view line : absl::StrSplit(status, '\n')) {
    if (absl::ConsumePrefix(&line, key) && absl::ConsumePrefix(&line, ":")) {
      return std::string(absl::StripAsciiWhitespace(line));
    }
  }
  return "";
}

std::vector<std::string> Tasks(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') out.push_back(e->d_name);
  }
  closedir(d);
  return out;
}

int CountOf(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

class PrivilegeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root to switch to other uids";
    if (access("/usr/bin/setpriv", X_OK) != 0) GTEST_SKIP() << "needs setpriv";
    unit_ = ReadFile(UnitPath("unwindd.service"));
    ASSERT_FALSE(unit_.empty());
    server_ = dir_.path() + "/unwindd";
    ASSERT_TRUE(CopyFile(testing::UnwinddBinary(), server_, 0755));
    client_ = dir_.path() + "/test_client";
    ASSERT_TRUE(CopyFile(ServerTestBinary("test_client"), client_, 0755));
    // The owner's files, in a directory only the owner may enter: unwindd
    // reads them with CAP_DAC_READ_SEARCH, not as its own user.
    own_dir_ = dir_.path() + "/owner";
    ASSERT_EQ(mkdir(own_dir_.c_str(), 0700), 0);
    ASSERT_TRUE(CopyFile(harness::FixturePath(kFixture), own_dir_ + "/fixture", 0755));
    ASSERT_TRUE(CopyFile(harness::FixturePath(kFixture), own_dir_ + "/deleted", 0755));
    for (const char* f : {"", "/fixture", "/deleted"}) {
      ASSERT_EQ(chown((own_dir_ + f).c_str(), kOwner, kOwner), 0);
    }
    socket_ = dir_.path() + "/unwindd.sock";
  }

  void TearDown() override {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }

  // unwindd as the unit runs it, with `caps` (CAP_* names) for both the
  // ambient and the bounding set, on a socket it inherits, and on `extra`
  // (named "extra") after it.
  void StartDaemon(const std::vector<std::string>& caps, int extra = -1) {
    ASSERT_NO_FATAL_FAILURE(Spawn(caps, extra));
    for (int i = 0; i < 1000 && !absl::StrContains(Stderr(), "listening on"); ++i) {
      int status;
      ASSERT_NE(waitpid(pid_, &status, WNOHANG), pid_) << "unwindd exited: " << Stderr();
      usleep(20000);
    }
    ASSERT_TRUE(absl::StrContains(Stderr(), "listening on")) << Stderr();
  }

  void Spawn(const std::vector<std::string>& caps, int extra) {
    // What unwindd.socket does: root-owned, group unwindd, 0660, listening.
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(fd, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    ASSERT_LT(socket_.size(), sizeof(addr.sun_path));
    std::memcpy(addr.sun_path, socket_.data(), socket_.size());
    ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    ASSERT_EQ(chown(socket_.c_str(), 0, kDaemon), 0);
    ASSERT_EQ(chmod(socket_.c_str(), 0660), 0);
    ASSERT_EQ(listen(fd, 16), 0);

    const std::string c = SetprivCaps(caps);
    std::vector<std::string> argv = {
        "/usr/bin/setpriv",     absl::StrCat("--reuid=", kDaemon),
        absl::StrCat("--regid=", kDaemon), "--clear-groups",
        "--inh-caps=" + c,     "--ambient-caps=" + c,
        "--bounding-set=" + c, "--no-new-privs",
        server_,               "--request-log=-"};
    std::vector<char*> args;
    for (std::string& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    stderr_ = dir_.path() + "/stderr.log";
    int err = open(stderr_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    ASSERT_GE(err, 0);
    pid_ = fork();
    ASSERT_GE(pid_, 0);
    if (pid_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      int devnull = open("/dev/null", O_RDWR);
      dup2(devnull, STDIN_FILENO);
      dup2(devnull, STDOUT_FILENO);
      dup2(err, STDERR_FILENO);
      // sd_listen_fds(3): the socket is fd 3, for the pid that execs (setpriv
      // execs unwindd in the same process).
      if (extra == 3) extra = dup(extra);
      if (fd != 3) dup2(fd, 3);
      fcntl(3, F_SETFD, 0);
      if (extra >= 0) {
        dup2(extra, 4);
        fcntl(4, F_SETFD, 0);
      }
      setenv("LISTEN_PID", std::to_string(getpid()).c_str(), 1);
      setenv("LISTEN_FDS", extra >= 0 ? "2" : "1", 1);
      setenv("LISTEN_FDNAMES", extra >= 0 ? "unwindd:extra" : "unwindd", 1);
      execv(args[0], args.data());
      _exit(127);
    }
    close(err);
    close(fd);  // unwindd has it now
  }

  std::string Stderr() const { return ReadFile(stderr_); }

  // The client's one line, run as `uid` in group kDaemon (0: root).
  std::string Client(int uid, const std::string& what, const std::string& arg) {
    std::vector<std::string> argv = {client_, "unix:" + socket_, what, arg};
    if (uid != 0) {
      argv.insert(argv.begin(),
                  {"setpriv", absl::StrCat("--reuid=", uid), absl::StrCat("--regid=", uid),
                   absl::StrCat("--groups=", kDaemon)});
    }
    absl::StatusOr<harness::ToolOutput> out = harness::RunTool(argv, absl::Seconds(60));
    EXPECT_TRUE(out.ok()) << out.status();
    if (!out.ok()) return "";
    EXPECT_EQ(out->exit_code, 0) << out->stderr_text;
    return out->stdout_text;
  }

  // `path` run as kOwner.
  harness::RunningProgram StartAsOwner(const std::string& path) {
    std::string script = absl::StrCat(path, ".sh");
    std::string in_dir = dir_.path() + script.substr(script.rfind('/'));
    std::ofstream s(in_dir);
    s << "#!/bin/sh\nexec setpriv --reuid=" << kOwner << " --regid=" << kOwner
      << " --clear-groups " << path << "\n";
    s.close();
    chmod(in_dir.c_str(), 0755);
    absl::StatusOr<harness::RunningProgram> p = harness::StartProgram(in_dir);
    EXPECT_TRUE(p.ok()) << p.status();
    return std::move(*p);
  }

  // UnwindProcess as root: the modules under the owner's directory, each
  // "path: error" ("path: ok" when its file was read).
  std::vector<std::string> OwnerModules(pid_t pid) {
    auto stub = v1::Unwinder::NewStub(
        grpc::CreateChannel("unix:" + socket_, grpc::InsecureChannelCredentials()));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    v1::UnwindProcessRequest r;
    r.set_pid(pid);
    v1::UnwindResponse resp;
    grpc::Status s = stub->UnwindProcess(&context, r, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    std::vector<std::string> out;
    for (const v1::Module& m : resp.modules()) {
      if (!absl::StartsWith(m.path(), own_dir_)) continue;
      out.push_back(absl::StrCat(m.path().substr(own_dir_.size()), ": ",
                                 m.error().empty() && !m.from_memory() ? "ok" : m.error()));
    }
    return out;
  }

  TempDir dir_;
  std::string unit_;
  std::string server_;
  std::string client_;
  std::string own_dir_;
  std::string socket_;
  std::string stderr_;
  pid_t pid_ = -1;
};

TEST_F(PrivilegeTest, RunsAsItsUnitSaysWithExactlyTheNeededCapabilities) {
  const std::vector<std::string> caps = UnitValues(unit_, "AmbientCapabilities");
  ASSERT_EQ(MaskOf(caps), NeededCapabilityMask()) << absl::StrJoin(caps, " ");
  ASSERT_EQ(MaskOf(UnitValues(unit_, "CapabilityBoundingSet")), NeededCapabilityMask());
  ASSERT_EQ(UnitValues(unit_, "NoNewPrivileges"), std::vector<std::string>{"yes"});
  StartDaemon(caps);

  // unwindd's own view: its uid, exactly these capabilities, no new privileges.
  std::string status = ReadFile(absl::StrCat("/proc/", pid_, "/status"));
  EXPECT_EQ(StatusField(status, "Uid"), "64990\t64990\t64990\t64990");
  EXPECT_EQ(StatusField(status, "Gid"), "64990\t64990\t64990\t64990");
  EXPECT_EQ(StatusField(status, "Groups"), "");
  absl::StatusOr<CapabilitySets> c = ParseCapabilities(status);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(CapabilityNames(c->effective), CapabilityNames(NeededCapabilityMask()));
  EXPECT_EQ(CapabilityNames(c->permitted), CapabilityNames(NeededCapabilityMask()));
  EXPECT_EQ(CapabilityNames(c->bounding), CapabilityNames(NeededCapabilityMask()));
  EXPECT_EQ(StatusField(status, "NoNewPrivs"), "1");
  // And its log says so, and that nothing is missing.
  std::string log = Stderr();
  EXPECT_TRUE(absl::StrContains(
      log, absl::StrCat("unwindd: running as uid 64990 gid 64990, effective capabilities: ",
                        CapabilityNames(NeededCapabilityMask()), "\n")))
      << log;
  EXPECT_FALSE(absl::StrContains(log, "without ")) << log;
  EXPECT_FALSE(absl::StrContains(log, "dropped")) << log;
  EXPECT_TRUE(absl::StrContains(log, "listening on unix:" + socket_ + " (from systemd, unwindd)"))
      << log;

  harness::RunningProgram owned = StartAsOwner(own_dir_ + "/fixture");
  harness::RunningProgram deleted = StartAsOwner(own_dir_ + "/deleted");
  ASSERT_EQ(unlink((own_dir_ + "/deleted").c_str()), 0);
  const std::string pid = absl::StrCat(owned.pid());

  // CAP_SYS_PTRACE: another uid's process, for its owner and for root.
  std::string own = Client(kOwner, "process", pid);
  EXPECT_TRUE(absl::StartsWith(own, "OK frames=")) << own;
  EXPECT_NE(own, "OK frames=0\n");
  EXPECT_EQ(Client(0, "process", pid), own);
  EXPECT_EQ(Client(kOwner, "snapshot", pid), "OK frames=1\n");
  // ... and never for a third user, who may connect (group unwindd).
  EXPECT_EQ(Client(kOther, "process", pid), "PERMISSION_DENIED frames=0\n");
  EXPECT_EQ(Client(kOther, "snapshot", pid), "PERMISSION_DENIED frames=0\n");

  // CAP_DAC_READ_SEARCH: the module file in the owner's 0700 directory;
  // CAP_CHECKPOINT_RESTORE: the deleted one, through /proc/PID/map_files.
  EXPECT_EQ(OwnerModules(owned.pid()), std::vector<std::string>{"/fixture: ok"});
  EXPECT_EQ(OwnerModules(deleted.pid()), std::vector<std::string>{"/deleted: ok"});

  // CAP_SETUID/CAP_SETGID: a file opened as its caller. The owner's own
  // file opens (and is no core); a root-only 0600 file does not, although
  // unwindd itself could read it: a worker acting for a caller has no
  // capabilities. Nor can a caller reach the owner's file through
  // another process's /proc/PID/root.
  const std::string secret = dir_.path() + "/secret";
  ASSERT_TRUE(CopyFile(harness::FixturePath(kFixture), secret, 0600));
  EXPECT_EQ(Client(kOwner, "core", own_dir_ + "/fixture"), "INVALID_ARGUMENT frames=0\n");
  EXPECT_EQ(Client(kOwner, "core", secret), "PERMISSION_DENIED frames=0\n");
  EXPECT_EQ(Client(kOther, "core", own_dir_ + "/fixture"), "PERMISSION_DENIED frames=0\n");
  EXPECT_EQ(Client(kOther, "core", absl::StrCat("/proc/", pid, "/root", own_dir_, "/fixture")),
            "PERMISSION_DENIED frames=0\n");
  EXPECT_EQ(Client(0, "core", secret), "INVALID_ARGUMENT frames=0\n");

  for (int tracer : testing::TracerPids(owned.pid())) EXPECT_EQ(tracer, 0);
  kill(pid_, SIGTERM);
  int wstatus = 0;
  ASSERT_EQ(waitpid(pid_, &wstatus, 0), pid_);
  pid_ = -1;
  EXPECT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) << wstatus;
  // The socket file is systemd's (RemoveOnStop=): unwindd leaves it.
  EXPECT_EQ(access(socket_.c_str(), F_OK), 0);
}

// With CAP_SYS_PTRACE alone unwindd still serves, says once at start-up
// what will not work, and then refuses exactly that.
TEST_F(PrivilegeTest, SaysWhatAMissingCapabilityCosts) {
  StartDaemon({"CAP_SYS_PTRACE"});
  std::string log = Stderr();
  EXPECT_EQ(CountOf(log, "without cap_dac_read_search: module files"), 1) << log;
  EXPECT_EQ(CountOf(log, "without cap_setgid/cap_setuid: files named in requests"), 1) << log;
  EXPECT_EQ(CountOf(log, "without cap_checkpoint_restore: deleted or replaced"), 1) << log;
  EXPECT_EQ(CountOf(log, "unwindd: without "), 3) << log;

  harness::RunningProgram owned = StartAsOwner(own_dir_ + "/fixture");
  std::string own = Client(kOwner, "process", absl::StrCat(owned.pid()));
  EXPECT_TRUE(absl::StartsWith(own, "OK frames=")) << own;
  std::vector<std::string> modules = OwnerModules(owned.pid());
  ASSERT_EQ(modules.size(), 1u);
  EXPECT_TRUE(absl::StrContains(modules[0], "Permission denied")) << modules[0];
  EXPECT_EQ(Client(kOwner, "core", own_dir_ + "/fixture"), "PERMISSION_DENIED frames=0\n");
  EXPECT_EQ(CountOf(Stderr(), "unwindd: without "), 3);  // said once, not per request
}

// An inherited TCP socket is served too, its callers without identity (as
// on a --listen=tcp: port): no processes for them.
TEST_F(PrivilegeTest, InheritedTcpSocketServesCallersWithoutIdentity) {
  int tcp = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(tcp, 0);
  sockaddr_in in{};
  in.sin_family = AF_INET;
  in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(in);
  ASSERT_EQ(bind(tcp, reinterpret_cast<sockaddr*>(&in), sizeof(in)), 0);
  ASSERT_EQ(listen(tcp, 16), 0);
  ASSERT_EQ(getsockname(tcp, reinterpret_cast<sockaddr*>(&in), &len), 0);
  const std::string port = absl::StrCat(ntohs(in.sin_port));
  StartDaemon(UnitValues(unit_, "AmbientCapabilities"), tcp);
  close(tcp);
  EXPECT_TRUE(absl::StrContains(Stderr(), "listening on tcp:127.0.0.1:" + port + " (from systemd, extra)"))
      << Stderr();
  harness::RunningProgram owned = StartAsOwner(own_dir_ + "/fixture");
  const std::string pid = absl::StrCat(owned.pid());
  absl::StatusOr<harness::ToolOutput> out =
      harness::RunTool({client_, "127.0.0.1:" + port, "process", pid}, absl::Seconds(60));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->stdout_text, "PERMISSION_DENIED frames=0\n") << out->stderr_text;
  EXPECT_TRUE(absl::StrContains(Stderr(), "\"caller\": \"tcp=ipv4:127.0.0.1:")) << Stderr();
  // The Unix socket beside it still knows its callers.
  EXPECT_TRUE(absl::StartsWith(Client(kOwner, "process", pid), "OK frames="));
}

// Anything but a listening stream socket is refused at start, saying which.
TEST_F(PrivilegeTest, RefusesAnInheritedFdItCannotServe) {
  int unlistened = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(unlistened, 0);
  ASSERT_NO_FATAL_FAILURE(Spawn({"CAP_SYS_PTRACE"}, unlistened));
  close(unlistened);
  int status = 0;
  ASSERT_EQ(waitpid(pid_, &status, 0), pid_);
  pid_ = -1;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << status;
  EXPECT_TRUE(absl::StrContains(Stderr(), "inherited fd 4 (socket activation, LISTEN_FDS) is a "
                                          "stream socket that is not listening"))
      << Stderr();
}

// Started as full root (docs/deployment.md's `sudo unwindd`), unwindd keeps only what
// it needs, unless told otherwise.
TEST_F(PrivilegeTest, RootKeepsOnlyTheNeededCapabilities) {
  absl::StatusOr<std::unique_ptr<testing::ServerProcess>> s =
      testing::ServerProcess::Start(dir_.path(), {});
  ASSERT_TRUE(s.ok()) << s.status();
  std::string status = ReadFile(absl::StrCat("/proc/", (*s)->pid(), "/status"));
  absl::StatusOr<CapabilitySets> c = ParseCapabilities(status);
  ASSERT_TRUE(c.ok()) << c.status();
  absl::StatusOr<CapabilitySets> ours = ReadCapabilities();
  ASSERT_TRUE(ours.ok());
  const CapabilityMask expected = ours->effective & NeededCapabilityMask();
  EXPECT_EQ(CapabilityNames(c->effective), CapabilityNames(expected));
  EXPECT_EQ(CapabilityNames(c->permitted), CapabilityNames(expected));
  if ((ours->effective & CapabilityBit(8)) != 0) {  // CAP_SETPCAP
    EXPECT_EQ(CapabilityNames(c->bounding), CapabilityNames(NeededCapabilityMask() & ours->bounding));
  }
  // Every thread, not just the main one (capability sets are per thread).
  std::string task = absl::StrCat("/proc/", (*s)->pid(), "/task");
  EXPECT_GT((*s)->CountThreads(), 1);
  for (const std::string& tid : Tasks(task)) {
    absl::StatusOr<CapabilitySets> t =
        ParseCapabilities(ReadFile(absl::StrCat(task, "/", tid, "/status")));
    ASSERT_TRUE(t.ok());
    EXPECT_EQ(t->effective, expected) << "thread " << tid;
  }
  EXPECT_TRUE(absl::StrContains((*s)->Stderr(), "dropped capabilities it does not need: "))
      << (*s)->Stderr();
  EXPECT_EQ((*s)->Terminate(), 0);

  TempDir other;
  s = testing::ServerProcess::Start(other.path(), {"--keep-capabilities"});
  ASSERT_TRUE(s.ok()) << s.status();
  c = ParseCapabilities(ReadFile(absl::StrCat("/proc/", (*s)->pid(), "/status")));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->effective, ours->effective);
  EXPECT_TRUE(absl::StrContains((*s)->Stderr(), "more capabilities than needed"));
}

// The units as systemd would load them: `systemd-analyze verify` has
// nothing to say (an unknown key or a bad value is a warning there, so any
// output fails), and `systemd-analyze security` rates the service's
// exposure no worse than it is now (2.7 of 10).
TEST(SystemdUnitsTest, VerifyCleanlyAndStayHardened) {
  if (access("/usr/bin/systemd-analyze", X_OK) != 0) GTEST_SKIP() << "needs systemd-analyze";
  TempDir dir;
  // ExecStart must name an executable that exists: the one built here.
  std::string service = ReadFile(UnitPath("unwindd.service"));
  ASSERT_TRUE(absl::StrContains(service, "ExecStart=/usr/local/bin/unwindd "));
  absl::StrReplaceAll({{"/usr/local/bin/unwindd", testing::UnwinddBinary()}}, &service);
  std::ofstream(dir.path() + "/unwindd.service") << service;
  ASSERT_TRUE(CopyFile(UnitPath("unwindd.socket"), dir.path() + "/unwindd.socket", 0644));
  absl::StatusOr<harness::ToolOutput> out = harness::RunTool(
      {"systemd-analyze", "verify", dir.path() + "/unwindd.socket",
       dir.path() + "/unwindd.service"},
      absl::Seconds(60));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->exit_code, 0);
  EXPECT_EQ(out->stdout_text + out->stderr_text, "");
  out = harness::RunTool({"systemd-analyze", "security", "--offline=true", "--threshold=27",
                          dir.path() + "/unwindd.service"},
                         absl::Seconds(60));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->exit_code, 0) << out->stdout_text;

  std::string socket = ReadFile(UnitPath("unwindd.socket"));
  EXPECT_EQ(UnitValues(socket, "ListenStream"), std::vector<std::string>{"/run/unwindd.sock"});
  EXPECT_EQ(UnitValues(socket, "SocketMode"), std::vector<std::string>{"0660"});
  EXPECT_EQ(UnitValues(socket, "SocketGroup"), std::vector<std::string>{"unwindd"});
  EXPECT_EQ(UnitValues(socket, "Accept"), std::vector<std::string>{"no"});
}

}  // namespace
}  // namespace unwindd::service
