// Socket activation: listening sockets inherited from systemd (or anything
// that speaks its protocol, sd_listen_fds(3)): LISTEN_PID is our pid,
// LISTEN_FDS=N sockets are fds 3..3+N-1, LISTEN_FDNAMES names them
// (colon-separated, optional). Implemented here rather than linking
// libsystemd for these few lines; the protocol is the man page's.
//
//   absl::StatusOr<std::vector<InheritedSocket>> s = TakeInheritedSockets();
//   for (InheritedSocket& l : *s) ...   // a Unix or TCP listening socket each
//
// unwindd accepts on an inherited Unix socket itself (listener.h: peer
// credentials), and on an inherited TCP one too, handing each connection
// to gRPC, which in 1.51 cannot adopt a listening fd.
#ifndef UNWINDD_SERVICE_SERVER_ACTIVATION_H_
#define UNWINDD_SERVICE_SERVER_ACTIVATION_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "memory/scoped_fd.h"

namespace unwindd::service {

// sd_listen_fds(3): the first inherited fd.
inline constexpr int kListenFdsStart = 3;
// More than any unit of ours passes; a larger LISTEN_FDS is refused.
inline constexpr int kMaxListenFds = 64;

struct ListenEnv {
  int count = 0;                   // fds kListenFdsStart.. kListenFdsStart+count-1
  std::vector<std::string> names;  // empty, or one per fd
};

// The environment's claim, unchecked against the fds: count 0 when
// LISTEN_PID is unset or another process's (the variables were meant for
// it, e.g. a parent that was activated). InvalidArgument for a malformed
// LISTEN_PID/LISTEN_FDS, more than kMaxListenFds, or a LISTEN_FDNAMES with
// another number of names. Null pointers are unset variables.
absl::StatusOr<ListenEnv> ParseListenEnv(const char* listen_pid, const char* listen_fds,
                                         const char* listen_fdnames, pid_t self);

struct InheritedSocket {
  memory::ScopedFd fd;
  int family = 0;       // AF_UNIX, AF_INET or AF_INET6
  std::string name;     // from LISTEN_FDNAMES; "" if none
  std::string address;  // for logs: "unix:/run/unwindd.sock", "tcp:0.0.0.0:50051"
};

// Checks that `fd` is a listening (SO_ACCEPTCONN) stream socket of family
// AF_UNIX, AF_INET or AF_INET6, and describes it; FailedPrecondition
// saying what it is instead. Does not take `fd`: `out->fd` stays invalid.
absl::Status CheckListeningSocket(int fd, InheritedSocket* out);

// Reads and unsets LISTEN_PID, LISTEN_FDS and LISTEN_FDNAMES, checks every
// fd they name and takes them (close-on-exec from now on). Empty when
// nothing was passed. One bad fd fails the whole: a unit that passes
// something unwindd cannot serve is misconfigured, and should not start
// half-working.
absl::StatusOr<std::vector<InheritedSocket>> TakeInheritedSockets();

}  // namespace unwindd::service

#endif  // UNWINDD_SERVICE_SERVER_ACTIVATION_H_
