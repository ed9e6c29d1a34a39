#include "testdata/debuginfo/servers.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace unwindd::debuginfo_testing {
namespace {

absl::Status Errno(absl::string_view what) {
  return absl::InternalError(absl::StrCat(what, ": ", strerror(errno)));
}

// Connects to 127.0.0.1:port.
int Connect(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// The value of the first metrics line starting with `prefix`, or -1.
long Metric(const std::string& metrics, absl::string_view prefix) {
  for (absl::string_view line : absl::StrSplit(metrics, '\n')) {
    if (!absl::StartsWith(line, prefix)) continue;
    size_t sp = line.rfind(' ');
    long v = 0;
    if (sp != absl::string_view::npos && absl::SimpleAtoi(line.substr(sp + 1), &v)) {
      return v;
    }
  }
  return -1;
}

}  // namespace

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

absl::Status WriteFile(const std::string& path, const std::string& bytes, int mode) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return Errno(absl::StrCat("create ", path));
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      close(fd);
      return Errno(absl::StrCat("write ", path));
    }
    done += n;
  }
  close(fd);
  return absl::OkStatus();
}

absl::Status MakeDirs(const std::string& path) {
  std::string cur;
  for (absl::string_view part : absl::StrSplit(path, '/')) {
    if (part.empty()) {
      if (cur.empty()) cur = "/";
      continue;
    }
    if (!cur.empty() && cur.back() != '/') cur += '/';
    absl::StrAppend(&cur, part);
    if (mkdir(cur.c_str(), 0755) != 0 && errno != EEXIST) {
      return Errno(absl::StrCat("mkdir ", cur));
    }
  }
  return absl::OkStatus();
}

std::string NewTempDir(const std::string& prefix) {
  const char* base = getenv("TEST_TMPDIR");
  std::string tmpl = absl::StrCat(base != nullptr ? base : "/tmp", "/", prefix, "XXXXXX");
  char* made = mkdtemp(tmpl.data());
  return made != nullptr ? std::string(made) : "";
}

absl::StatusOr<int> FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Errno("socket");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    absl::Status s = Errno("bind");
    close(fd);
    return s;
  }
  close(fd);
  return ntohs(a.sin_port);
}

absl::StatusOr<std::string> HttpGet(int port, const std::string& path,
                                    absl::Duration timeout) {
  int fd = Connect(port);
  if (fd < 0) return absl::UnavailableError(absl::StrCat("connect: ", strerror(errno)));
  std::string req = absl::StrCat("GET ", path, " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
  if (write(fd, req.data(), req.size()) != static_cast<ssize_t>(req.size())) {
    close(fd);
    return absl::UnavailableError("write");
  }
  std::string resp;
  absl::Time deadline = absl::Now() + timeout;
  char buf[65536];
  while (true) {
    int ms = static_cast<int>(absl::ToInt64Milliseconds(deadline - absl::Now()));
    if (ms <= 0) {
      close(fd);
      return absl::DeadlineExceededError("no complete answer");
    }
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, ms) <= 0) continue;
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    resp.append(buf, n);
  }
  close(fd);
  size_t body = resp.find("\r\n\r\n");
  if (!absl::StartsWith(resp, "HTTP/1.") || body == std::string::npos) {
    return absl::DataLossError("not an HTTP answer");
  }
  if (resp.find(" 200 ") > resp.find("\r\n")) {
    return absl::NotFoundError(resp.substr(0, resp.find("\r\n")));
  }
  return resp.substr(body + 4);
}

absl::StatusOr<std::unique_ptr<DebuginfodServer>> DebuginfodServer::Start(
    const std::string& dir, int files, absl::Duration timeout) {
  absl::Status last = absl::UnavailableError("not started");
  // A port found free can be taken before debuginfod binds it: retry.
  for (int attempt = 0; attempt < 5; ++attempt) {
    absl::StatusOr<int> port = FreePort();
    if (!port.ok()) return port.status();
    std::unique_ptr<DebuginfodServer> s(new DebuginfodServer());
    s->port_ = *port;
    s->work_dir_ = NewTempDir("debuginfod.");
    if (s->work_dir_.empty()) return Errno("mkdtemp");
    const std::string log = s->work_dir_ + "/log";
    const std::string db = s->work_dir_ + "/db.sqlite";
    const std::string port_arg = absl::StrCat(*port);
    pid_t pid = fork();
    if (pid < 0) return Errno("fork");
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      int out = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (out >= 0) {
        dup2(out, 1);
        dup2(out, 2);
      }
      int in = open("/dev/null", O_RDONLY);
      if (in >= 0) dup2(in, 0);
      // -t0 -g0: scan once, never rescan or groom; -c1: one scanner thread
      // on a machine shared with builds.
      execlp("debuginfod", "debuginfod", "-F", dir.c_str(), "-p", port_arg.c_str(),
             "-d", db.c_str(), "-t0", "-g0", "-c1", static_cast<char*>(nullptr));
      _exit(127);
    }
    s->pid_ = pid;
    const absl::Time deadline = absl::Now() + timeout;
    bool exited = false;
    while (absl::Now() < deadline) {
      int st;
      if (waitpid(pid, &st, WNOHANG) == pid) {
        exited = true;
        s->pid_ = -1;
        break;
      }
      absl::StatusOr<std::string> m = HttpGet(*port, "/metrics", absl::Seconds(5));
      if (m.ok() && Metric(*m, "scanned_files_total{source=\"file\"}") >= files &&
          Metric(*m, "thread_work_pending{role=\"scan\"}") == 0) {
        return s;
      }
      usleep(50 * 1000);
    }
    last = absl::UnavailableError(absl::StrFormat(
        "debuginfod on port %d %s: %s", *port,
        exited ? "exited" : "did not index in time", s->Log()));
    if (!exited) return last;
  }
  return last;
}

DebuginfodServer::~DebuginfodServer() {
  if (pid_ > 0) {
    kill(pid_, SIGTERM);
    for (int i = 0; i < 100; ++i) {
      int st;
      if (waitpid(pid_, &st, WNOHANG) == pid_) {
        pid_ = -1;
        break;
      }
      usleep(20 * 1000);
    }
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
}

std::string DebuginfodServer::url() const {
  return absl::StrCat("http://127.0.0.1:", port_);
}

std::string DebuginfodServer::Log() const {
  absl::StatusOr<std::string> s = ReadFile(work_dir_ + "/log");
  return s.ok() ? *s : "";
}

absl::StatusOr<std::unique_ptr<StubHttpServer>> StubHttpServer::Start(
    Mode mode, std::string body) {
  std::unique_ptr<StubHttpServer> s(new StubHttpServer());
  s->mode_ = mode;
  s->body_ = std::move(body);
  s->listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s->listen_fd_ < 0) return Errno("socket");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (bind(s->listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      listen(s->listen_fd_, 16) != 0 ||
      getsockname(s->listen_fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    return Errno("bind/listen");
  }
  s->port_ = ntohs(a.sin_port);
  if (pipe2(s->wake_fd_, O_CLOEXEC) != 0) return Errno("pipe");
  s->thread_ = std::thread([p = s.get()] { p->Run(); });
  return s;
}

StubHttpServer::~StubHttpServer() {
  if (wake_fd_[1] >= 0) {
    char c = 1;
    (void)!write(wake_fd_[1], &c, 1);
  }
  if (thread_.joinable()) thread_.join();
  for (int fd : {listen_fd_, wake_fd_[0], wake_fd_[1]}) {
    if (fd >= 0) close(fd);
  }
}

std::string StubHttpServer::url() const {
  return absl::StrCat("http://127.0.0.1:", port_);
}

void StubHttpServer::Run() {
  std::vector<int> held;  // kHang: connections kept open, unanswered
  while (true) {
    pollfd p[2] = {{listen_fd_, POLLIN, 0}, {wake_fd_[0], POLLIN, 0}};
    if (poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (p[1].revents != 0) break;
    if ((p[0].revents & POLLIN) == 0) continue;
    int c = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) continue;
    requests_.fetch_add(1);
    if (mode_ == Mode::kHang) {
      held.push_back(c);
      continue;
    }
    // Read the request head (bounded), then answer and close.
    std::string req;
    char buf[4096];
    while (req.find("\r\n\r\n") == std::string::npos && req.size() < 65536) {
      pollfd q{c, POLLIN, 0};
      if (poll(&q, 1, 5000) <= 0) break;
      ssize_t n = read(c, buf, sizeof buf);
      if (n <= 0) break;
      req.append(buf, n);
    }
    std::string head = absl::StrFormat(
        "HTTP/1.1 200 OK\r\nContent-Length: %d\r\nContent-Type: "
        "application/octet-stream\r\nConnection: close\r\n\r\n",
        body_.size());
    std::string out = head + body_;
    size_t done = 0;
    while (done < out.size()) {
      ssize_t n = send(c, out.data() + done, out.size() - done, MSG_NOSIGNAL);
      if (n <= 0) break;
      done += n;
    }
    close(c);
  }
  for (int fd : held) close(fd);
}

}  // namespace unwindd::debuginfo_testing
