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
  ~UnixListener();

  // Accepts on a thread of its own until Stop().
  void Start(grpc::Server* server, std::atomic<uint64_t>* connections);
  // Stops accepting, closes the socket and removes its file. Idempotent.
  void Stop();

 private:
  UnixListener(Options options, memory::ScopedFd listen_fd, memory::ScopedFd wake_fd,
               PeerRegistry* peers)
      : options_(std::move(options)),
        listen_fd_(std::move(listen_fd)),
        wake_fd_(std::move(wake_fd)),
        peers_(peers) {}
  void AcceptLoop(grpc::Server* server, std::atomic<uint64_t>* connections);

  const Options options_;
  memory::ScopedFd listen_fd_;
  memory::ScopedFd wake_fd_;  // an eventfd that ends AcceptLoop
  PeerRegistry* const peers_;
  std::thread thread_;
  bool stopped_ = false;
};

}  // namespace unwindd::service

#endif  // UNWINDD_SERVICE_SERVER_LISTENER_H_
