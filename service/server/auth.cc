#include "service/server/auth.h"

#include <arpa/inet.h>
#include <linux/capability.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "proc/procfs.h"
#include "service/server/capabilities.h"

namespace unwindd::service {
namespace {

// The kernel's own limit on supplementary groups (NGROUPS_MAX).
constexpr size_t kMaxGroups = 65536;

// Taking a caller's filesystem identity needs CAP_SETUID (setfsuid to
// another uid) and CAP_SETGID (setfsgid, setgroups): root has them, and
// unwindd's own user gets them from its unit (capabilities.h).
bool CanSwitchIdentity(CapabilityMask effective) {
  constexpr CapabilityMask kNeed = CapabilityBit(CAP_SETUID) | CapabilityBit(CAP_SETGID);
  return (effective & kNeed) == kNeed;
}

uid_t CurrentFsuid() { return static_cast<uid_t>(syscall(SYS_setfsuid, -1)); }
gid_t CurrentFsgid() { return static_cast<gid_t>(syscall(SYS_setfsgid, -1)); }

absl::StatusOr<std::vector<gid_t>> ThreadGroups() {
  int n = getgroups(0, nullptr);
  if (n < 0) return absl::ErrnoToStatus(errno, "getgroups");
  std::vector<gid_t> groups(n);
  n = getgroups(n, groups.data());
  if (n < 0) return absl::ErrnoToStatus(errno, "getgroups");
  groups.resize(n);
  return groups;
}

// Only this thread's groups: glibc's setgroups() would change every thread
// (it broadcasts set*id calls to keep POSIX semantics).
bool SetThreadGroups(const std::vector<gid_t>& groups) {
  return syscall(SYS_setgroups, groups.size(), groups.data()) == 0;
}

// The process's own supplementary groups: the main thread's, which never
// takes a caller's identity (workers do). /proc/self/status is the main
// thread's ("Groups:" line).
std::vector<gid_t> OwnGroups() {
  std::vector<gid_t> out;
  FILE* f = fopen("/proc/self/status", "re");
  if (f == nullptr) return out;
  char line[4096];
  while (fgets(line, sizeof line, f) != nullptr) {
    absl::string_view l(line);
    if (!absl::ConsumePrefix(&l, "Groups:")) continue;
    for (absl::string_view g : absl::StrSplit(l, absl::ByAnyChar(" \t\n"), absl::SkipEmpty())) {
      uint32_t v = 0;
      if (absl::SimpleAtoi(g, &v) && out.size() < kMaxGroups) out.push_back(v);
    }
    break;
  }
  fclose(f);
  return out;
}

}  // namespace

ScopedOwnFsIdentity::ScopedOwnFsIdentity() {
  absl::StatusOr<ThreadCapabilities> caps = GetThreadCapabilities();
  if (!caps.ok()) return;
  const uid_t uid = geteuid();
  const gid_t gid = getegid();
  if (CurrentFsuid() == uid && CurrentFsgid() == gid &&
      caps->effective == caps->permitted) {
    return;  // not inside a ScopedFsIdentity
  }
  // unwindd's capabilities first (ScopedFsIdentity emptied the effective
  // set; raising it from the permitted set needs none): switching back
  // needs CAP_SETUID and CAP_SETGID.
  saved_effective_ = caps->effective;
  raised_ = caps->effective != caps->permitted &&
            SetThreadEffectiveCapabilities(caps->permitted).ok();
  if (!CanSwitchIdentity(caps->permitted)) return;
  absl::StatusOr<std::vector<gid_t>> groups = ThreadGroups();
  if (!groups.ok()) return;
  saved_groups_ = *std::move(groups);
  saved_fsuid_ = CurrentFsuid();
  saved_fsgid_ = CurrentFsgid();
  switched_ = true;
  // Back to unwindd's own: uid first, which for a root unwindd restores the
  // filesystem capabilities (the kernel raises them when fsuid becomes 0).
  syscall(SYS_setfsuid, uid);
  syscall(SYS_setfsgid, gid);
  SetThreadGroups(OwnGroups());
}

ScopedOwnFsIdentity::~ScopedOwnFsIdentity() {
  if (switched_) {
    // Groups before giving up root's fsuid, as ScopedFsIdentity does.
    SetThreadGroups(saved_groups_);
    syscall(SYS_setfsgid, saved_fsgid_);
    syscall(SYS_setfsuid, saved_fsuid_);
    if (CurrentFsuid() != saved_fsuid_ || CurrentFsgid() != saved_fsgid_) {
      std::fprintf(stderr, "unwindd: cannot restore a worker's file identity\n");
    }
  }
  if (raised_ && !SetThreadEffectiveCapabilities(saved_effective_).ok()) {
    std::fprintf(stderr, "unwindd: cannot drop a worker's capabilities again\n");
  }
}

std::string Caller::Describe() const {
  if (tls) return absl::StrCat("tls=", identity, "@", peer);
  if (transport == Transport::kTcp) return absl::StrCat("tcp=", peer);
  return absl::StrCat("uid=", uid);
}

absl::Status CheckPermission(const Caller& caller, Permission permission,
                             absl::string_view what) {
  if ((caller.permissions & permission) != 0) return absl::OkStatus();
  const char* name = permission == kPermitSnapshots ? "snapshots"
                     : permission == kPermitCores   ? "cores"
                                                    : "processes";
  if (caller.rule.empty()) {
    return absl::PermissionDeniedError(absl::StrCat(
        "no --tls-allow rule names the client certificate (",
        caller.identity, "), so it may not ", what));
  }
  return absl::PermissionDeniedError(
      absl::StrCat(caller.Describe(), " may not ", what, ": its rule --tls-allow=",
                   caller.rule, " does not grant '", name, "'"));
}

absl::StatusOr<PeerRegistry::Peer> PeerRegistry::ReadPeer(int fd) {
  Peer p;
  ucred cred{};
  socklen_t len = sizeof(cred);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
    return absl::ErrnoToStatus(errno, "getsockopt(SO_PEERCRED)");
  }
  p.pid = cred.pid;
  p.uid = cred.uid;
  p.gid = cred.gid;
  // SO_PEERGROUPS (Linux 4.13): ERANGE with the needed size first.
  std::vector<gid_t> groups(64);
  for (int attempt = 0; attempt < 2; ++attempt) {
    len = groups.size() * sizeof(gid_t);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &len) == 0) {
      groups.resize(len / sizeof(gid_t));
      p.groups = std::move(groups);
      break;
    }
    if (errno != ERANGE || len / sizeof(gid_t) > kMaxGroups) {
      return absl::ErrnoToStatus(errno, "getsockopt(SO_PEERGROUPS)");
    }
    groups.resize(len / sizeof(gid_t));
  }
  struct stat st;
  if (fstat(fd, &st) != 0) return absl::ErrnoToStatus(errno, "fstat(socket)");
  p.socket_inode = st.st_ino;
  return p;
}

absl::StatusOr<PeerRegistry::Peer> PeerRegistry::ReadTcpPeer(int fd) {
  Peer p;
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return absl::ErrnoToStatus(errno, "getpeername");
  }
  char host[INET6_ADDRSTRLEN] = {};
  if (addr.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&addr);
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
    p.tcp_address = absl::StrCat("ipv4:", host, ":", ntohs(in->sin_port));
  } else if (addr.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&addr);
    inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
    p.tcp_address = absl::StrCat("ipv6:[", host, "]:", ntohs(in6->sin6_port));
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("a connection of family ", addr.ss_family, " is not TCP"));
  }
  struct stat st;
  if (fstat(fd, &st) != 0) return absl::ErrnoToStatus(errno, "fstat(socket)");
  p.socket_inode = st.st_ino;
  return p;
}

void PeerRegistry::Add(int fd, Peer peer) {
  absl::MutexLock l(&mu_);
  peers_[fd] = std::move(peer);
}

size_t PeerRegistry::Prune() {
  absl::MutexLock l(&mu_);
  std::vector<int> gone;
  for (const auto& [fd, peer] : peers_) {
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_ino != peer.socket_inode) gone.push_back(fd);
  }
  for (int fd : gone) peers_.erase(fd);
  return peers_.size();
}

size_t PeerRegistry::size() const {
  absl::MutexLock l(&mu_);
  return peers_.size();
}

absl::StatusOr<Caller> PeerRegistry::Identify(absl::string_view grpc_peer,
                                              bool allow_tcp_unwind_any) const {
  Caller c;
  c.peer = std::string(grpc_peer);
  if (absl::StartsWith(grpc_peer, "ipv4:") ||
      absl::StartsWith(grpc_peer, "ipv6:")) {
    c.transport = Caller::Transport::kTcp;
    c.unrestricted = allow_tcp_unwind_any;
    return c;
  }
  int fd = -1;
  absl::string_view rest = grpc_peer;
  if (!absl::ConsumePrefix(&rest, "fd:") || !absl::SimpleAtoi(rest, &fd)) {
    return absl::UnauthenticatedError(
        absl::StrCat("unknown kind of peer '", grpc_peer, "'"));
  }
  absl::MutexLock l(&mu_);
  auto it = peers_.find(fd);
  struct stat st;
  if (it == peers_.end() || fstat(fd, &st) != 0 ||
      st.st_ino != it->second.socket_inode) {
    return absl::UnauthenticatedError(
        absl::StrCat("no credentials recorded for peer '", grpc_peer, "'"));
  }
  const Peer& p = it->second;
  if (!p.tcp_address.empty()) {
    // Accepted by unwindd on an inherited TCP socket: as gRPC's TCP peers.
    c.transport = Caller::Transport::kTcp;
    c.peer = p.tcp_address;
    c.unrestricted = allow_tcp_unwind_any;
    return c;
  }
  c.transport = Caller::Transport::kUnix;
  c.uid = p.uid;
  c.gid = p.gid;
  c.groups = p.groups;
  c.pid = p.pid;
  c.unrestricted = p.uid == 0;
  return c;
}

absl::Status CheckProcessAccess(const Caller& caller, pid_t pid) {
  if (pid <= 0) {
    return absl::InvalidArgumentError(absl::StrFormat("invalid pid %d", pid));
  }
  if (caller.unrestricted) return absl::OkStatus();
  if (caller.tls) {
    // The certificate's rule is the whole answer: no uid to compare.
    return CheckPermission(caller, kPermitProcesses,
                           absl::StrFormat("unwind process %d", pid));
  }
  if (caller.transport == Caller::Transport::kTcp) {
    return absl::PermissionDeniedError(
        "unwinding processes over plain TCP needs unwindd --allow-tcp-unwind-any; "
        "use the Unix socket, or TLS with a client certificate granted "
        "'processes' (--tls-allow)");
  }
  absl::StatusOr<std::string> status =
      proc::ReadProcFile(pid, proc::ProcPath(pid, "status"), 64 << 10);
  if (!status.ok()) return status.status();
  // "Uid:\treal\teffective\tsaved\tfilesystem"
  bool found = false;
  for (absl::string_view line : absl::StrSplit(*status, '\n')) {
    if (!absl::ConsumePrefix(&line, "Uid:")) continue;
    found = true;
    std::vector<absl::string_view> ids =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    for (size_t i = 0; i < ids.size() && i < 3; ++i) {
      uint32_t id = 0;
      if (!absl::SimpleAtoi(ids[i], &id) || id != caller.uid) {
        return absl::PermissionDeniedError(absl::StrFormat(
            "process %d is not owned by uid %d (its real, effective and saved "
            "uids must all be yours)",
            pid, caller.uid));
      }
    }
    if (ids.size() < 3) found = false;
  }
  if (!found) {
    return absl::InternalError(
        absl::StrFormat("no Uid line in /proc/%d/status", pid));
  }
  struct stat st;
  if (stat(proc::ProcPath(pid, "").c_str(), &st) != 0) {
    return proc::ProcError(errno, pid, proc::ProcPath(pid, ""));
  }
  if (st.st_uid != caller.uid) {
    return absl::PermissionDeniedError(absl::StrFormat(
        "process %d is not dumpable (set-uid/set-gid, or it said so with "
        "prctl); only root may unwind it",
        pid));
  }
  return absl::OkStatus();
}

ScopedFsIdentity::ScopedFsIdentity(const Caller& caller) {
  if (caller.unrestricted) return;
  const bool tcp = caller.transport == Caller::Transport::kTcp;
  const uid_t uid = tcp ? kNobodyUid : caller.uid;
  const gid_t gid = tcp ? kNobodyGid : caller.gid;
  absl::StatusOr<ThreadCapabilities> caps = GetThreadCapabilities();
  if (!caps.ok()) {
    status_ = caps.status();
    return;
  }
  if (!CanSwitchIdentity(caps->effective)) {
    // Without CAP_SETUID and CAP_SETGID we cannot take anyone's identity;
    // our own uid's callers may still use files we open as ourselves.
    if (uid != geteuid()) {
      status_ = absl::PermissionDeniedError(absl::StrFormat(
          "unwindd runs without CAP_SETUID and CAP_SETGID (as uid %d), so it "
          "cannot open files as uid %d",
          geteuid(), uid));
    }
    return;
  }
  absl::StatusOr<std::vector<gid_t>> groups = ThreadGroups();
  if (!groups.ok()) {
    status_ = groups.status();
    return;
  }
  saved_groups_ = *std::move(groups);
  saved_fsuid_ = CurrentFsuid();
  saved_fsgid_ = CurrentFsgid();
  saved_effective_ = caps->effective;
  switched_ = true;
  // Groups and gid first: once fsuid is not 0 the kernel drops the
  // filesystem capabilities, but CAP_SETGID is not one of them either way.
  std::vector<gid_t> want = tcp ? std::vector<gid_t>{} : caller.groups;
  syscall(SYS_setfsgid, gid);
  syscall(SYS_setfsuid, uid);
  bool ok = SetThreadGroups(want) && CurrentFsgid() == gid && CurrentFsuid() == uid;
  // Then no capability at all while acting for the caller. The kernel
  // drops only the filesystem ones when fsuid leaves 0, and none for an
  // unwindd running as its own user (its fsuid never was 0): its
  // CAP_DAC_READ_SEARCH would read any file, and CAP_SYS_PTRACE (with
  // CAP_CHECKPOINT_RESTORE) would let a caller's path go through another
  // user's /proc/PID/root or /proc/PID/map_files.
  ok = SetThreadEffectiveCapabilities(0).ok() && ok;
  if (!ok) {
    status_ = absl::InternalError(absl::StrFormat(
        "cannot switch to the filesystem identity of uid %d gid %d", uid, gid));
  }
}

ScopedFsIdentity::~ScopedFsIdentity() {
  if (!switched_) return;
  // Capabilities back first: setfsuid to another uid needs CAP_SETUID.
  bool ok = SetThreadEffectiveCapabilities(saved_effective_).ok();
  syscall(SYS_setfsuid, saved_fsuid_);
  syscall(SYS_setfsgid, saved_fsgid_);
  if (!ok || !SetThreadGroups(saved_groups_) || CurrentFsuid() != saved_fsuid_) {
    // The thread keeps a less privileged identity: later requests on it
    // fail to open files, which is safe; say so loudly.
    std::fprintf(stderr, "unwindd: cannot restore a worker's file identity\n");
  }
}

absl::StatusOr<memory::ScopedFd> OpenAsCaller(const Caller& caller,
                                              const std::string& path) {
  if (path.empty() || path.size() > PATH_MAX) {
    return absl::InvalidArgumentError("empty or overlong path");
  }
  ScopedFsIdentity as(caller);
  if (!as.status().ok()) return as.status();
  // O_NOCTTY|O_NONBLOCK: a path naming a FIFO or a tty must not block or
  // become our terminal; callers check the file is regular.
  memory::ScopedFd fd =
      memory::OpenCloexec(path.c_str(), O_RDONLY | O_NOCTTY | O_NONBLOCK);
  if (!fd.valid()) {
    int err = errno;
    return absl::ErrnoToStatus(
        err, absl::StrCat("open ", path, " as ", caller.Describe()));
  }
  return fd;
}

}  // namespace unwindd::service
