// Who is calling unwindd, and what they may unwind. A daemon that can ptrace
// any process is a security boundary: a caller may only get from it what it
// could get by ptracing or reading files itself.
//
//   absl::StatusOr<Caller> c = peers.Identify(context->peer(), allow_tcp_any);
//   absl::Status s = CheckProcessAccess(*c, pid);       // before and after attach
//   absl::StatusOr<memory::ScopedFd> fd = OpenAsCaller(*c, "/path/core");
//
// Identity: Unix-socket connections are accepted by unwindd itself (see
// server_listener.h), which reads SO_PEERCRED (uid, gid) and SO_PEERGROUPS
// (supplementary groups) at accept time, before handing the socket to gRPC
// with AddInsecureChannelFromFd; gRPC then names the peer "fd:N". The fd
// cannot be reused by another connection while a call on it is running (the
// call holds the transport, which holds the fd), so "fd:N" -> credentials
// is exact for the call's lifetime. TCP peers ("ipv4:..."/"ipv6:...") carry
// no identity, unless unwindd's TCP listeners use TLS with client
// certificates (tls.h): then the verified certificate names the caller and
// its --tls-allow rule says what it may ask for (Caller::permissions). TCP
// connections unwindd accepted itself on a socket inherited from systemd
// (listener.h), recorded here by fd as TCP peers, never have TLS.
#ifndef UNWINDD_SERVICE_SERVER_AUTH_H_
#define UNWINDD_SERVICE_SERVER_AUTH_H_

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "memory/scoped_fd.h"

namespace unwindd::service {

inline constexpr uid_t kNobodyUid = 65534;
inline constexpr gid_t kNobodyGid = 65534;

// What a caller may ask for, by RPC family. Unix and plain-TCP callers get
// all three (and the rules below still decide which processes and files);
// a TLS caller only what the --tls-allow rule for its certificate grants.
enum Permission : uint32_t {
  kPermitSnapshots = 1u << 0,  // UnwindSnapshots, UnwindSnapshotBatches
  kPermitCores = 1u << 1,      // UnwindCore
  kPermitProcesses = 1u << 2,  // UnwindProcess, and a sample's live pid
};
inline constexpr uint32_t kPermitAll =
    kPermitSnapshots | kPermitCores | kPermitProcesses;

struct Caller {
  enum class Transport { kUnix, kTcp };
  Transport transport = Transport::kUnix;
  uint32_t permissions = kPermitAll;  // Permission bits
  // TCP with a verified client certificate (tls.h). `identity`: the names
  // of the certificate that matched a --tls-allow rule (all of its names
  // when none did); `rule`: that rule as written, "" when none matched.
  bool tls = false;
  std::string identity;
  std::string rule;
  uid_t uid = kNobodyUid;
  gid_t gid = kNobodyGid;
  std::vector<gid_t> groups;  // supplementary groups (Unix only)
  pid_t pid = 0;              // the connecting process (Unix only)
  std::string peer;           // gRPC's peer string, for logs
  // Root on the Unix socket, or any TCP caller with --allow-tcp-unwind-any.
  bool unrestricted = false;

  // "uid=1000", "tcp=ipv4:127.0.0.1:5555" or
  // "tls=profiler@ipv4:127.0.0.1:5555", for logs and messages.
  std::string Describe() const;
};

// OK if `caller` may ask for `permission` (`what` names the request in the
// message); PermissionDenied naming the --tls-allow rule (or its absence)
// otherwise. Only TLS callers lack permissions.
absl::Status CheckPermission(const Caller& caller, Permission permission,
                             absl::string_view what);

// Credentials of the Unix-socket connections unwindd accepted, by fd.
class PeerRegistry {
 public:
  struct Peer {
    pid_t pid = 0;
    uid_t uid = 0;
    gid_t gid = 0;
    std::vector<gid_t> groups;
    ino_t socket_inode = 0;  // to tell a reused fd number from ours
    // Set for a TCP connection (no credentials): its address as gRPC names
    // TCP peers, "ipv4:127.0.0.1:5555" or "ipv6:[::1]:5555".
    std::string tcp_address;
  };

  // Reads the credentials of the connected Unix socket `fd`.
  static absl::StatusOr<Peer> ReadPeer(int fd);
  // Reads the address of the connected TCP socket `fd`.
  static absl::StatusOr<Peer> ReadTcpPeer(int fd);

  void Add(int fd, Peer peer);
  // Forgets entries whose fd no longer refers to the socket they were
  // recorded for (gRPC closed it); returns how many remain.
  size_t Prune();
  size_t size() const;

  // Unauthenticated for an unknown peer (over TCP only when `tcp_allowed`).
  absl::StatusOr<Caller> Identify(absl::string_view grpc_peer,
                                  bool allow_tcp_unwind_any) const;

 private:
  mutable absl::Mutex mu_;
  absl::flat_hash_map<int, Peer> peers_ ABSL_GUARDED_BY(mu_);
};

// OK if `caller` may read process `pid`'s memory: unrestricted callers
// always; Unix callers whose uid is the process's real, effective and saved
// uid while the process is dumpable (its /proc/PID is owned by that uid —
// the kernel makes a non-dumpable process's /proc entries root's, e.g.
// after a set-uid or set-gid exec); TLS callers granted 'processes'
// always; other TCP callers never. PermissionDenied
// says why; NotFound if there is no such process.
absl::Status CheckProcessAccess(const Caller& caller, pid_t pid);

// Opens `path` read-only as the caller would: with the caller's filesystem
// uid, gid and groups on this thread only (setfsuid/setfsgid and a raw
// setgroups syscall, which unlike glibc's setgroups() does not apply to
// every thread), so the kernel checks every directory and the file itself.
// Unrestricted callers open as the server. TCP callers (TLS ones too, even
// with 'processes') open as nobody.
absl::StatusOr<memory::ScopedFd> OpenAsCaller(const Caller& caller,
                                              const std::string& path);

// Switches this thread's filesystem identity to `caller`'s for its
// lifetime (a no-op for unrestricted callers), and empties the thread's
// effective capabilities meanwhile. Files opened meanwhile are checked by
// the kernel as the caller. ok() is false if the switch failed (e.g.
// unwindd lacks CAP_SETUID/CAP_SETGID and the caller is another uid); then
// nothing must be opened on its behalf.
class ScopedFsIdentity {
 public:
  explicit ScopedFsIdentity(const Caller& caller);
  ~ScopedFsIdentity();
  ScopedFsIdentity(const ScopedFsIdentity&) = delete;
  ScopedFsIdentity& operator=(const ScopedFsIdentity&) = delete;

  const absl::Status& status() const { return status_; }

 private:
  bool switched_ = false;
  uid_t saved_fsuid_ = 0;
  gid_t saved_fsgid_ = 0;
  std::vector<gid_t> saved_groups_;
  uint64_t saved_effective_ = 0;  // capabilities, capabilities.h
  absl::Status status_;
};

// The opposite, inside a ScopedFsIdentity: this thread's filesystem
// identity back to unwindd's own (its effective uid and gid, the main
// thread's groups and its capabilities) for its lifetime. For what belongs
// to unwindd rather than to the caller: its debuginfod cache (docs/cores.md
// "Binaries from elsewhere"). A no-op outside a ScopedFsIdentity.
class ScopedOwnFsIdentity {
 public:
  ScopedOwnFsIdentity();
  ~ScopedOwnFsIdentity();
  ScopedOwnFsIdentity(const ScopedOwnFsIdentity&) = delete;
  ScopedOwnFsIdentity& operator=(const ScopedOwnFsIdentity&) = delete;

 private:
  bool switched_ = false;
  bool raised_ = false;  // the effective capabilities were raised
  uid_t saved_fsuid_ = 0;
  gid_t saved_fsgid_ = 0;
  std::vector<gid_t> saved_groups_;
  uint64_t saved_effective_ = 0;
};

}  // namespace unwindd::service

#endif  // UNWINDD_SERVICE_SERVER_AUTH_H_
