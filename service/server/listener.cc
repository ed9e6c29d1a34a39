#include "service/server/listener.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "grpcpp/server_posix.h"

namespace unwindd::service {
namespace {

absl::Status Errno(absl::string_view what, const std::string& path) {
  return absl::ErrnoToStatus(errno, absl::StrCat(what, " ", path));
}

// A socket file exists at `path`: remove it if nobody accepts on it (left
// by a server that died), refuse if somebody does.
absl::Status RemoveStaleSocket(const std::string& path, const sockaddr_un& addr) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) {
    return errno == ENOENT ? absl::OkStatus() : Errno("lstat", path);
  }
  if (!S_ISSOCK(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, " exists and is not a socket"));
  }
  memory::ScopedFd probe(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!probe.valid()) return Errno("socket for", path);
  if (connect(probe.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("another server is listening on ", path));
  }
  if (unlink(path.c_str()) != 0 && errno != ENOENT) return Errno("unlink", path);
  return absl::OkStatus();
}

}  // namespace

void SetUnixSendBuffer(int fd) {
  const int bytes = kUnixSendBufferBytes;
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes));
}

absl::StatusOr<std::unique_ptr<UnixListener>> UnixListener::Bind(
    const Options& options, PeerRegistry* peers) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (options.path.empty() || options.path.size() >= sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad Unix socket path '", options.path, "'"));
  }
  std::memcpy(addr.sun_path, options.path.data(), options.path.size());
  absl::Status s = RemoveStaleSocket(options.path, addr);
  if (!s.ok()) return s;
  memory::ScopedFd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return Errno("socket for", options.path);
  // No window in which the socket is more open than asked: bind under a
  // umask that leaves at most `mode`, then set `mode` exactly.
  mode_t old_umask = umask(0777 & ~options.mode);
  int r = bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr));
  int bind_errno = errno;
  umask(old_umask);
  if (r != 0) {
    errno = bind_errno;
    return Errno("bind", options.path);
  }
  if (options.group.has_value() && chown(options.path.c_str(), -1, *options.group) != 0) {
    return Errno("chown", options.path);
  }
  if (chmod(options.path.c_str(), options.mode) != 0) return Errno("chmod", options.path);
  if (listen(fd.get(), 128) != 0) return Errno("listen", options.path);
  memory::ScopedFd wake(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake.valid()) return Errno("eventfd for", options.path);
  return std::unique_ptr<UnixListener>(
      new UnixListener(options, std::move(fd), std::move(wake), peers));
}

absl::StatusOr<std::unique_ptr<UnixListener>> UnixListener::Adopt(
    memory::ScopedFd listen_fd, bool tcp, size_t max_connections, PeerRegistry* peers) {
  Options options;  // no path: nothing of ours to remove at Stop()
  options.max_connections = max_connections;
  memory::ScopedFd wake(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake.valid()) return Errno("eventfd for inherited fd", std::to_string(listen_fd.get()));
  return std::unique_ptr<UnixListener>(new UnixListener(
      std::move(options), std::move(listen_fd), std::move(wake), peers, tcp));
}

UnixListener::~UnixListener() { Stop(); }

void UnixListener::Start(grpc::Server* server, std::atomic<uint64_t>* connections) {
  thread_ = std::thread([this, server, connections] { AcceptLoop(server, connections); });
}

void UnixListener::AcceptLoop(grpc::Server* server,
                              std::atomic<uint64_t>* connections) {
  while (true) {
    pollfd fds[2] = {{listen_fd_.get(), POLLIN, 0}, {wake_fd_.get(), POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      std::perror("unwindd: poll on the listening socket");
      return;
    }
    if (fds[1].revents != 0) return;
    if (fds[0].revents == 0) continue;
    memory::ScopedFd conn(accept4(listen_fd_.get(), nullptr, nullptr,
                                  SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (!conn.valid()) {
      // EMFILE and friends: back off instead of spinning on a full table.
      if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED) usleep(10000);
      continue;
    }
    absl::StatusOr<PeerRegistry::Peer> peer = tcp_ ? PeerRegistry::ReadTcpPeer(conn.get())
                                                   : PeerRegistry::ReadPeer(conn.get());
    if (!peer.ok()) continue;  // closes the connection
    if (peers_->size() >= options_.max_connections &&
        peers_->Prune() >= options_.max_connections) {
      continue;  // over the limit: refuse by closing
    }
    // Recorded before gRPC sees the socket, so no call can arrive on it
    // without credentials.
    peers_->Add(conn.get(), *std::move(peer));
    if (connections != nullptr) ++*connections;
    if (tcp_) {
      // As gRPC sets on the connections of its own TCP ports (whose send
      // buffers the kernel sizes itself, unless one is set).
      int one = 1;
      setsockopt(conn.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    } else {
      SetUnixSendBuffer(conn.get());
    }
    grpc::AddInsecureChannelFromFd(server, conn.release());
  }
}

void UnixListener::Stop() {
  if (stopped_) return;
  stopped_ = true;
  uint64_t one = 1;
  if (write(wake_fd_.get(), &one, sizeof(one)) < 0) {
    std::perror("unwindd: waking the accept thread");
  }
  if (thread_.joinable()) thread_.join();
  listen_fd_ = memory::ScopedFd();
  if (!options_.path.empty()) unlink(options_.path.c_str());
}

}  // namespace unwindd::service
