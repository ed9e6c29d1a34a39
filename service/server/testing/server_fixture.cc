#include "service/server/testing/server_fixture.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "proto/grpc/health/v1/health.grpc.pb.h"
#include "testdata/harness/tools.h"

namespace unwindd::service::testing {
namespace {

int CountDir(const std::string& path) {
  DIR* d = opendir(path.c_str());
  if (d == nullptr) return -1;
  int n = 0;
  while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

}  // namespace

std::string UnwinddBinary() { return ServiceBinary("unwindd"); }

std::string ServiceBinary(const std::string& name) {
  return absl::StrCat(harness::RunfilesRoot(), "/service/", name);
}

std::string ServerTestBinary(const std::string& name) {
  return absl::StrCat(harness::RunfilesRoot(), "/service/server/", name);
}

absl::StatusOr<std::unique_ptr<ServerProcess>> ServerProcess::Start(
    const std::string& dir, const std::vector<std::string>& extra_args,
    absl::Duration timeout) {
  std::vector<std::string> argv = {
      UnwinddBinary(), absl::StrCat("--listen=unix:", dir, "/unwindd.sock"),
      absl::StrCat("--request-log=", dir, "/requests.log")};
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  std::vector<char*> args;
  for (std::string& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  std::string err_path = dir + "/stderr.log";
  int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (err < 0) return absl::ErrnoToStatus(errno, "open " + err_path);
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) return absl::ErrnoToStatus(errno, "fork");
  if (pid == 0) {
    // A test that dies must not leave a root daemon behind.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    int devnull = open("/dev/null", O_RDWR);
    dup2(devnull, STDIN_FILENO);
    dup2(devnull, STDOUT_FILENO);
    dup2(err, STDERR_FILENO);
    execv(args[0], args.data());
    _exit(127);
  }
  close(err);
  std::unique_ptr<ServerProcess> server(new ServerProcess(pid, dir));
  absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    int status;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      server->pid_ = -1;
      return absl::InternalError(
          absl::StrCat("unwindd exited at start: ", ReadFile(err_path)));
    }
    if (access(server->socket_.c_str(), F_OK) == 0 && server->Serving()) {
      return server;
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  return absl::DeadlineExceededError(
      absl::StrCat("unwindd did not start serving: ", ReadFile(err_path)));
}

ServerProcess::~ServerProcess() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
  }
}

std::shared_ptr<grpc::Channel> ServerProcess::NewChannel() const {
  return grpc::CreateChannel(address(), grpc::InsecureChannelCredentials());
}

std::unique_ptr<v1::Unwinder::Stub> ServerProcess::Stub() const {
  return v1::Unwinder::NewStub(NewChannel());
}

int ServerProcess::TcpPort() const {
  for (absl::string_view line : absl::StrSplit(Stderr(), '\n')) {
    size_t at = line.find("(port ");
    if (at == absl::string_view::npos) continue;
    absl::string_view rest = line.substr(at + 6);
    int port = 0;
    if (absl::SimpleAtoi(rest.substr(0, rest.find(')')), &port)) return port;
  }
  return 0;
}

std::string ServerProcess::Stderr() const { return ReadFile(dir_ + "/stderr.log"); }
std::string ServerProcess::RequestLog() const {
  return ReadFile(dir_ + "/requests.log");
}

bool ServerProcess::Serving(const std::string& service) const {
  auto stub = grpc::health::v1::Health::NewStub(NewChannel());
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(service);
  grpc::health::v1::HealthCheckResponse response;
  return stub->Check(&context, request, &response).ok() &&
         response.status() == grpc::health::v1::HealthCheckResponse::SERVING;
}

int ServerProcess::CountFds() const {
  return CountDir(absl::StrCat("/proc/", pid_, "/fd"));
}

int ServerProcess::CountThreads() const {
  return CountDir(absl::StrCat("/proc/", pid_, "/task"));
}

int ServerProcess::Terminate(absl::Duration timeout) {
  if (pid_ <= 0) return -1;
  kill(pid_, SIGTERM);
  absl::Time deadline = absl::Now() + timeout;
  int status = 0;
  while (true) {
    pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) break;
    if (absl::Now() > deadline) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      pid_ = -1;
      return -1;
    }
    absl::SleepFor(absl::Milliseconds(10));
  }
  pid_ = -1;
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

std::vector<int> TracerPids(pid_t pid) {
  std::vector<int> out;
  std::string dir = absl::StrCat("/proc/", pid, "/task");
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    for (absl::string_view line :
         absl::StrSplit(ReadFile(absl::StrCat(dir, "/", e->d_name, "/status")), '\n')) {
      int tracer = 0;
      if (absl::ConsumePrefix(&line, "TracerPid:") &&
          absl::SimpleAtoi(absl::StripAsciiWhitespace(line), &tracer)) {
        out.push_back(tracer);
      }
    }
  }
  closedir(d);
  return out;
}

TempDir::TempDir() {
  char tmpl[] = "/tmp/unwindd-test.XXXXXX";
  const char* p = mkdtemp(tmpl);
  path_ = p != nullptr ? p : "/tmp";
  chmod(path_.c_str(), 0755);
}

TempDir::~TempDir() {
  if (path_ == "/tmp") return;
  std::vector<std::string> argv = {"rm", "-rf", path_};
  pid_t pid = fork();
  if (pid == 0) {
    execvp("rm", std::vector<char*>{argv[0].data(), argv[1].data(), argv[2].data(),
                                    nullptr}
                     .data());
    _exit(127);
  }
  if (pid > 0) waitpid(pid, nullptr, 0);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool CopyFile(const std::string& from, const std::string& to, mode_t mode) {
  std::ifstream in(from, std::ios::binary);
  std::ofstream out(to, std::ios::binary);
  out << in.rdbuf();
  out.close();
  return in.good() && out.good() && chmod(to.c_str(), mode) == 0;
}

}  // namespace unwindd::service::testing
