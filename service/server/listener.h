// unwindd's Unix-socket listener. gRPC's own "unix:" listener gives a call
// no way to learn the peer's uid (1.51's auth context for Unix sockets holds
// none), so unwindd accepts connections itself, reads the peer's
// credentials (PeerRegistry::ReadPeer), records them, and only then hands
// the connected socket to gRPC (grpc::AddInsecureChannelFromFd), which names
// the call's peer "fd:N".
//
//   absl::StatusOr<std::unique_ptr<UnixListener>> l =
//       UnixListener::Bind({"/run/unwindd.sock", 0660, gid}, &peers);
//   (*l)->Start(server.get(), &stats.connections);
//   ...
//   (*l)->Stop();    // before server->Shutdown(): no fds handed to a dying server
//
// Sockets inherited from systemd (activation.h) are adopted rather than
// bound: a Unix one is served exactly as above, a TCP one the same way
// (gRPC 1.51 cannot take a listening fd) with its callers recorded as TCP
// peers, which have no identity, as on gRPC's own TCP ports.
#ifndef UNWINDD_SERVICE_SERVER_LISTENER_H_
#define UNWINDD_SERVICE_SERVER_LISTENER_H_

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "grpcpp/server.h"
#include "memory/scoped_fd.h"
#include "service/server/auth.h"

namespace unwindd::service {

// What an accepted Unix connection may hold of unwindd's answers that the
// client has not read yet (SO_SNDBUF, which the kernel doubles and caps at
// net.core.wmem_max). Linux's default, ~208 KiB, is less than one batch's
// answers for deep stacks (64 samples of 416 frames: ~900 KiB), so the
// stream's thread waited for the client in the middle of each batch;
// with ~1 MiB it does not (+22% samples per server CPU-second on such a
// recording, docs/speed.md "A recording through unwindd"). Memory stays
// bounded by this times --max-connections, as before by the default.
inline constexpr int kUnixSendBufferBytes = 512 << 10;
// Sets it on a connected Unix socket; errors are ignored (the default
// stays).
void SetUnixSendBuffer(int fd);

class UnixListener {
 public:
  struct Options {
    std::string path;
    mode_t mode = 0660;
    std::optional<gid_t> group;  // chown the socket to this group
    size_t max_connections = 1024;
  };

  // Creates the socket file (replacing a stale one nobody listens on;
  // FailedPrecondition if a server is listening there, or the path is not a
  // socket) with `mode`, and listens.
  static absl::StatusOr<std::unique_ptr<UnixListener>> Bind(const Options& options,
                                                            PeerRegistry* peers);
  // Serves an inherited listening socket (activation.h's checks passed):
  // AF_UNIX unless `tcp`. Its file, if any, belongs to whoever made it
  // (systemd): Stop() leaves it.
  static absl::StatusOr<std::unique_ptr<UnixListener>> Adopt(memory::ScopedFd listen_fd,
                                                             bool tcp,
                                                             size_t max_connections,
                                                             PeerRegistry* peers);
  ~UnixListener();

  // Accepts on a thread of its own until Stop().
  void Start(grpc::Server* server, std::atomic<uint64_t>* connections);
  // Stops accepting, closes the socket and removes its file. Idempotent.
  void Stop();

 private:
  UnixListener(Options options, memory::ScopedFd listen_fd, memory::ScopedFd wake_fd,
               PeerRegistry* peers, bool tcp = false)
      : options_(std::move(options)),
        listen_fd_(std::move(listen_fd)),
        wake_fd_(std::move(wake_fd)),
        peers_(peers),
        tcp_(tcp) {}
  void AcceptLoop(grpc::Server* server, std::atomic<uint64_t>* connections);

  const Options options_;
  memory::ScopedFd listen_fd_;
  memory::ScopedFd wake_fd_;  // an eventfd that ends AcceptLoop
  PeerRegistry* const peers_;
  const bool tcp_;  // an adopted TCP socket: peers without identity
  std::thread thread_;
  bool stopped_ = false;
};

}  // namespace unwindd::service

#endif  // UNWINDD_SERVICE_SERVER_LISTENER_H_
