#include "service/cli/demo.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace unwindd::service {
namespace {

constexpr absl::Duration kReadyTimeout = absl::Seconds(10);

// True when every thread of `pid` is sleeping in the kernel ('S'), i.e. has
// reached the blocking call the demo parks it in.
bool AllThreadsSleeping(pid_t pid) {
  std::string dir = absl::StrCat("/proc/", pid, "/task");
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return false;
  bool all = true;
  int count = 0;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream stat(absl::StrCat(dir, "/", e->d_name, "/stat"));
    std::string line;
    std::getline(stat, line);
    size_t paren = line.rfind(')');
    if (paren == std::string::npos || paren + 2 >= line.size()) continue;
    all &= line[paren + 2] == 'S';
    ++count;
  }
  closedir(d);
  return all && count > 0;
}

}  // namespace

absl::StatusOr<std::string> FindDemoBinary() {
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) return absl::InternalError("cannot read /proc/self/exe");
  std::string exe(self, n);
  std::string dir = exe.substr(0, exe.rfind('/'));
  std::vector<std::string> candidates = {
      exe + ".runfiles/unwindd/testdata/demo",
      dir + "/../testdata/demo",
  };
  if (const char* runfiles = getenv("RUNFILES_DIR")) {
    candidates.insert(candidates.begin(),
                      absl::StrCat(runfiles, "/unwindd/testdata/demo"));
  }
  for (const std::string& c : candidates) {
    if (access(c.c_str(), X_OK) == 0) return c;
  }
  return absl::NotFoundError(absl::StrCat(
      "demo program not found (looked in ", candidates.front(),
      "); build it with: bazel build //service:unwind"));
}

absl::StatusOr<std::unique_ptr<DemoProcess>> DemoProcess::Start() {
  absl::StatusOr<std::string> path = FindDemoBinary();
  if (!path.ok()) return path.status();
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("pipe: ", strerror(errno)));
  }
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return absl::InternalError(absl::StrCat("fork: ", strerror(errno)));
  }
  if (pid == 0) {
    // The demo dies with us, however we end: `unwind demo | head -3` kills
    // this process with SIGPIPE before the handle's destructor could run.
    // (The signal goes when the forking thread ends; main's, here.)
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);  // we were gone already
    dup2(fds[1], STDOUT_FILENO);
    execl(path->c_str(), path->c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[1]);
  std::unique_ptr<DemoProcess> demo(new DemoProcess(pid));
  std::string got;
  absl::Time deadline = absl::Now() + kReadyTimeout;
  while (got.find("ready\n") == std::string::npos) {
    int ms = static_cast<int>(absl::ToInt64Milliseconds(deadline - absl::Now()));
    pollfd p{fds[0], POLLIN, 0};
    if (ms <= 0 || poll(&p, 1, ms) <= 0) break;
    char buf[256];
    ssize_t r = read(fds[0], buf, sizeof(buf));
    if (r <= 0) break;
    got.append(buf, r);
  }
  close(fds[0]);
  if (got.find("ready\n") == std::string::npos) {
    return absl::DeadlineExceededError(
        absl::StrCat("demo program ", *path, " did not become ready"));
  }
  while (!AllThreadsSleeping(pid) && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  return demo;
}

DemoProcess::~DemoProcess() {
  kill(pid_, SIGKILL);
  while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
  }
}

}  // namespace unwindd::service
