#include "service/server/testing/process_cpu.h"

#include <dirent.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace unwindd::service::testing {
namespace {

// Field `n` (1-based, proc(5)) of /proc/PID/stat; false if unreadable.
// The command (field 2) may hold spaces and parentheses, so fields are
// counted after its last ')'.
bool StatField(pid_t pid, int n, uint64_t* out) {
  std::ifstream f(absl::StrCat("/proc/", pid, "/stat"));
  std::string line;
  if (!std::getline(f, line)) return false;
  const size_t close = line.rfind(')');
  if (close == std::string::npos || close + 2 > line.size()) return false;
  std::istringstream rest(line.substr(close + 2));
  std::string field;
  for (int i = 3; rest >> field; ++i) {
    if (i == n) return absl::SimpleAtoi(field, out);
  }
  return false;
}

}  // namespace

double ProcessCpuSeconds(pid_t pid) {
  // The process's CPU clock is the same sum (the scheduler's runtime of
  // every thread) at ns resolution, where /proc/PID/stat has 10 ms ticks:
  // too coarse for a pass of a few tens of milliseconds.
  clockid_t clock;
  timespec ts;
  if (clock_getcpuclockid(pid, &clock) == 0 && clock_gettime(clock, &ts) == 0) {
    return ts.tv_sec + ts.tv_nsec * 1e-9;
  }
  uint64_t utime = 0, stime = 0;
  if (!StatField(pid, 14, &utime) || !StatField(pid, 15, &stime)) return -1;
  return static_cast<double>(utime + stime) / sysconf(_SC_CLK_TCK);
}

int64_t ProcessContextSwitches(pid_t pid) {
  const std::string dir = absl::StrCat("/proc/", pid, "/task");
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return -1;
  int64_t total = 0;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream f(absl::StrCat(dir, "/", e->d_name, "/status"));
    std::string line;
    while (std::getline(f, line)) {
      absl::string_view v = line;
      if (!absl::ConsumePrefix(&v, "voluntary_ctxt_switches:") &&
          !absl::ConsumePrefix(&v, "nonvoluntary_ctxt_switches:")) {
        continue;
      }
      int64_t n = 0;
      if (absl::SimpleAtoi(absl::StripAsciiWhitespace(v), &n)) total += n;
    }
  }
  closedir(d);
  return total;
}

double SelfCpuSeconds() {
  rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  auto sec = [](const timeval& tv) { return tv.tv_sec + tv.tv_usec / 1e6; };
  return sec(ru.ru_utime) + sec(ru.ru_stime);
}

uint64_t ProcessStartTime(pid_t pid) {
  uint64_t start = 0;
  return StatField(pid, 22, &start) ? start : 0;
}

absl::StatusOr<pid_t> ListenerPid(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat("socket path too long: ", path));
  }
  std::memcpy(addr.sun_path, path.data(), path.size());
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::ErrnoToStatus(errno, "socket");
  if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    const int err = errno;
    close(fd);
    return absl::ErrnoToStatus(err, absl::StrCat("connect ", path));
  }
  ucred cred{};
  socklen_t len = sizeof(cred);
  const int r = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len);
  const int err = errno;
  close(fd);
  if (r != 0) return absl::ErrnoToStatus(err, "SO_PEERCRED");
  return cred.pid;
}

}  // namespace unwindd::service::testing
