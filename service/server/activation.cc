#include "service/server/activation.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace unwindd::service {
namespace {

absl::Status NotServable(int fd, absl::string_view what) {
  return absl::FailedPreconditionError(absl::StrCat(
      "inherited fd ", fd, " (socket activation, LISTEN_FDS) is ", what,
      "; unwindd serves listening stream sockets (ListenStream=) of family "
      "AF_UNIX, AF_INET or AF_INET6 only"));
}

int IntOption(int fd, int name, int* value) {
  socklen_t len = sizeof(*value);
  return getsockopt(fd, SOL_SOCKET, name, value, &len);
}

}  // namespace

absl::StatusOr<ListenEnv> ParseListenEnv(const char* listen_pid, const char* listen_fds,
                                         const char* listen_fdnames, pid_t self) {
  ListenEnv env;
  if (listen_pid == nullptr) return env;
  int64_t pid = 0;
  if (!absl::SimpleAtoi(listen_pid, &pid) || pid <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("LISTEN_PID '", absl::string_view(listen_pid).substr(0, 32),
                     "' is not a pid"));
  }
  if (pid != self) return env;  // meant for another process
  int64_t n = 0;
  if (listen_fds == nullptr || !absl::SimpleAtoi(listen_fds, &n) || n < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "LISTEN_PID is ours but LISTEN_FDS '",
        listen_fds == nullptr ? "(unset)" : absl::string_view(listen_fds).substr(0, 32),
        "' is not a count"));
  }
  if (n > kMaxListenFds) {
    return absl::InvalidArgumentError(absl::StrCat(
        "LISTEN_FDS=", n, ": more than ", kMaxListenFds, " inherited sockets"));
  }
  env.count = static_cast<int>(n);
  if (listen_fdnames != nullptr && n > 0) {
    // sd_listen_fds_with_names(3): one name per fd, separated by ':'.
    env.names = absl::StrSplit(listen_fdnames, ':');
    if (env.names.size() != static_cast<size_t>(n)) {
      return absl::InvalidArgumentError(
          absl::StrCat("LISTEN_FDNAMES has ", env.names.size(), " names for LISTEN_FDS=", n));
    }
  }
  return env;
}

absl::Status CheckListeningSocket(int fd, InheritedSocket* out) {
  struct stat st;
  if (fstat(fd, &st) != 0) {
    return NotServable(fd, absl::StrCat("not open (", std::strerror(errno), ")"));
  }
  if (!S_ISSOCK(st.st_mode)) return NotServable(fd, "not a socket");
  int type = 0, listening = 0, family = 0;
  if (IntOption(fd, SO_TYPE, &type) != 0 || IntOption(fd, SO_DOMAIN, &family) != 0 ||
      IntOption(fd, SO_ACCEPTCONN, &listening) != 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("getsockopt on inherited fd ", fd));
  }
  if (type != SOCK_STREAM) {
    return NotServable(fd, absl::StrCat("a socket of type ", type, ", not SOCK_STREAM"));
  }
  if (family != AF_UNIX && family != AF_INET && family != AF_INET6) {
    return NotServable(fd, absl::StrCat("a socket of family ", family));
  }
  if (listening == 0) {
    return NotServable(fd, "a stream socket that is not listening (Accept=yes "
                           "passes connections; unwindd wants Accept=no)");
  }
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("getsockname on inherited fd ", fd));
  }
  out->family = family;
  if (family == AF_UNIX) {
    const auto* un = reinterpret_cast<const sockaddr_un*>(&addr);
    size_t path_len = len > offsetof(sockaddr_un, sun_path)
                          ? len - offsetof(sockaddr_un, sun_path)
                          : 0;
    std::string path(un->sun_path, strnlen(un->sun_path, path_len));
    // An abstract socket starts with a NUL byte; say so rather than print "".
    if (path.empty() && path_len > 0) path = "@(abstract)";
    out->address = absl::StrCat("unix:", path);
    return absl::OkStatus();
  }
  char host[INET6_ADDRSTRLEN] = {};
  int port = 0;
  if (family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&addr);
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
    port = ntohs(in->sin_port);
    out->address = absl::StrCat("tcp:", host, ":", port);
  } else {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&addr);
    inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
    port = ntohs(in6->sin6_port);
    out->address = absl::StrCat("tcp:[", host, "]:", port);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<InheritedSocket>> TakeInheritedSockets() {
  absl::StatusOr<ListenEnv> env = ParseListenEnv(
      getenv("LISTEN_PID"), getenv("LISTEN_FDS"), getenv("LISTEN_FDNAMES"), getpid());
  // Unset whatever they said, as sd_listen_fds(unset_environment=1) does:
  // nothing unwindd starts (debuginfod's helpers) must take them as its own.
  unsetenv("LISTEN_PID");
  unsetenv("LISTEN_FDS");
  unsetenv("LISTEN_FDNAMES");
  if (!env.ok()) return env.status();
  std::vector<InheritedSocket> out;
  for (int i = 0; i < env->count; ++i) {
    const int fd = kListenFdsStart + i;
    InheritedSocket s;
    absl::Status ok = CheckListeningSocket(fd, &s);
    if (!ok.ok()) return ok;
    if (fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) {
      return absl::ErrnoToStatus(errno, absl::StrCat("FD_CLOEXEC on inherited fd ", fd));
    }
    s.fd = memory::ScopedFd(fd);
    if (!env->names.empty()) s.name = env->names[i];
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace unwindd::service
