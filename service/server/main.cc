// unwindd: the gRPC unwinding service (proto/unwinder.proto). See
// kServerUsage (server_flags.cc) and docs/service.md.
//
// Lifecycle: SIGTERM/SIGINT are blocked in every thread and taken by
// sigwait() in main, so no handler ever runs inside gRPC or a ptrace call.
// On either, unwindd drains (docs/fleet.md "Draining"): health reports
// NOT_SERVING, the Unix listeners close, calls that still arrive get
// UNAVAILABLE (clients retry them on another replica), running requests
// finish within --drain-timeout and snapshot streams end after their
// current message with UNAVAILABLE; then streams idle between messages
// end with UNAVAILABLE, the workers are joined — every target is detached
// by the worker that attached it — and unwindd exits 0.
#include <grp.h>
#include <malloc.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/grpcpp.h"
#include "service/common/version.h"
#include "service/server/activation.h"
#include "service/server/capabilities.h"
#include "service/server/flags.h"
#include "service/server/health.h"
#include "service/server/listener.h"
#include "service/server/open_calls.h"
#include "service/server/service.h"
#include "service/server/stats.h"
#include "service/server/tls.h"

namespace {

using unwindd::service::ListenAddress;

constexpr int kMaxMessageBytes = 16 << 20;  // a 1 MiB stack + 64Ki mappings
// How long a drained server waits, at most, for its calls to end.
constexpr absl::Duration kMaxFinishTime = absl::Seconds(2);
// Then how long it leaves gRPC's threads to write what the last calls
// sent (a stream ended by EndIdleStreams is done as soon as its handler
// returns, its trailers still to be written) before it exits.
constexpr absl::Duration kFlushTime = absl::Milliseconds(250);

int Fail(absl::string_view msg) {
  std::fprintf(stderr, "unwindd: %.*s\n", static_cast<int>(msg.size()), msg.data());
  return 1;
}

// Keeps only the capabilities unwindd needs (unless --keep-capabilities),
// then says once what it runs with and what will not work for want of a
// capability (docs/deployment.md "Running as a service").
absl::Status SetUpPrivileges(bool keep) {
  using unwindd::service::CapabilitySets;
  absl::StatusOr<CapabilitySets> before = unwindd::service::ReadCapabilities();
  if (!before.ok()) return before.status();
  if (!keep) {
    absl::Status s = unwindd::service::DropUnneededCapabilities();
    if (!s.ok()) return s;
  }
  absl::StatusOr<CapabilitySets> after = unwindd::service::ReadCapabilities();
  if (!after.ok()) return after.status();
  uint64_t dropped = before->effective & ~after->effective;
  if (dropped != 0) {
    std::fprintf(stderr, "unwindd: dropped capabilities it does not need: %s\n",
                 unwindd::service::CapabilityNames(dropped).c_str());
  }
  for (const std::string& line :
       unwindd::service::DescribePrivileges(geteuid(), getegid(), *after)) {
    std::fprintf(stderr, "unwindd: %s\n", line.c_str());
  }
  return absl::OkStatus();
}

int Run(const unwindd::service::ServerFlags& flags) {
  if (flags.request_log == "none") {
    unwindd::service::SetRequestLogFile(nullptr);
  } else if (flags.request_log != "-") {
    std::FILE* f = std::fopen(flags.request_log.c_str(), "ae");
    if (f == nullptr) return Fail(absl::StrCat("cannot open ", flags.request_log));
    unwindd::service::SetRequestLogFile(f);
  }
  std::optional<gid_t> group;
  if (!flags.socket_group.empty()) {
    struct group* g = getgrnam(flags.socket_group.c_str());
    if (g == nullptr) return Fail(absl::StrCat("no group ", flags.socket_group));
    group = g->gr_gid;
  }

  unwindd::service::PeerRegistry peers;
  // Listening sockets first, while unwindd has every capability it started
  // with (chown to --socket-group, a stale socket file in /run) and still
  // one thread (capability sets are per thread: SetUpPrivileges).
  absl::StatusOr<std::vector<unwindd::service::InheritedSocket>> inherited =
      unwindd::service::TakeInheritedSockets();
  if (!inherited.ok()) return Fail(inherited.status().ToString());
  std::vector<ListenAddress> listen = flags.listen;
  if (!inherited->empty() && flags.listen_is_default) listen.clear();
  std::vector<std::unique_ptr<unwindd::service::UnixListener>> listeners;
  std::vector<std::string> where;  // what each listener serves, for the log
  for (unwindd::service::InheritedSocket& s : *inherited) {
    if (s.family != AF_UNIX && flags.tls.enabled()) {
      // unwindd accepts an inherited TCP socket itself and hands gRPC each
      // connection as a plain channel (gRPC 1.51 has no TLS channel from
      // an fd): its callers would bypass the client certificates.
      return Fail(absl::StrCat("inherited socket ", s.address,
                               " is TCP, which cannot use TLS: listen with "
                               "--listen=tcp:HOST:PORT instead"));
    }
    absl::StatusOr<std::unique_ptr<unwindd::service::UnixListener>> u =
        unwindd::service::UnixListener::Adopt(std::move(s.fd), s.family != AF_UNIX,
                                              flags.max_connections, &peers);
    if (!u.ok()) return Fail(u.status().ToString());
    listeners.push_back(*std::move(u));
    where.push_back(absl::StrCat(s.address, " (from systemd",
                                 s.name.empty() ? "" : ", " + s.name, ")"));
  }
  for (const ListenAddress& l : listen) {
    if (l.kind != ListenAddress::Kind::kUnix) continue;
    absl::StatusOr<std::unique_ptr<unwindd::service::UnixListener>> u =
        unwindd::service::UnixListener::Bind(
            {l.address, flags.socket_mode, group, flags.max_connections}, &peers);
    if (!u.ok()) return Fail(u.status().ToString());
    listeners.push_back(*std::move(u));
    where.push_back(absl::StrCat("unix:", l.address));
  }
  absl::Status privileges = SetUpPrivileges(flags.keep_capabilities);
  if (!privileges.ok()) return Fail(privileges.ToString());

  // Every call's end, for the drain (open_calls.h); before any server.
  static unwindd::service::OpenCalls open_calls;
  grpc::Server::SetGlobalCallbacks(&open_calls);
  unwindd::service::UnwinderService service(flags.service, &peers);
  // Our own, synchronous health service (server_health.h says why).
  unwindd::service::HealthService health;
  grpc::EnableDefaultHealthCheckService(false);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.RegisterService(&service);
  builder.RegisterService(&health);
  builder.SetMaxReceiveMessageSize(kMaxMessageBytes);
  // Clients may send HTTP/2 DATA frames of any size up to the protocol's
  // largest (RFC 9113 §6.5.2; the default is 16 KiB), so that a sample's
  // stack copy lies in one piece of the received bytes, which the batch
  // reader then uses in place, rather than split every 16 KiB and gathered.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_FRAME_SIZE, (1 << 24) - 1);
  // Connections end after --max-connection-age (gRPC adds +-10% jitter) with
  // a GOAWAY: HTTP/2 keeps all of a client's calls on one connection, so
  // without it a client never moves to a replica that started after it
  // connected. Calls still running get the grace.
  if (flags.max_connection_age > absl::ZeroDuration()) {
    builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_MS,
                               static_cast<int>(absl::ToInt64Milliseconds(
                                   flags.max_connection_age)));
    builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS,
                               static_cast<int>(absl::ToInt64Milliseconds(
                                   flags.max_connection_age_grace)));
  }
  // Each call holds a gRPC thread while it waits for a worker; bound them
  // too, so floods are refused rather than absorbed.
  grpc::ResourceQuota quota("unwindd");
  quota.SetMaxThreads(flags.service.workers * 4 + flags.service.max_queued / 4 + 16);
  builder.SetResourceQuota(quota);
  // TCP: TLS with client certificates when configured (tls.h), else plain.
  std::shared_ptr<grpc::ServerCredentials> tcp_credentials =
      grpc::InsecureServerCredentials();
  if (flags.tls.enabled()) {
    absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> tls =
        unwindd::service::TlsServerCredentials(flags.tls);
    if (!tls.ok()) return Fail(tls.status().message());
    tcp_credentials = *std::move(tls);
  }
  std::vector<int> tcp_ports(listen.size(), 0);
  for (size_t i = 0; i < listen.size(); ++i) {
    if (listen[i].kind != ListenAddress::Kind::kTcp) continue;
    builder.AddListeningPort(listen[i].address, tcp_credentials, &tcp_ports[i]);
  }
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr) return Fail("cannot start the gRPC server");
  for (size_t i = 0; i < listen.size(); ++i) {
    if (listen[i].kind != ListenAddress::Kind::kTcp) continue;
    if (tcp_ports[i] == 0) {
      return Fail(absl::StrCat("cannot listen on tcp:", listen[i].address));
    }
    where.push_back(absl::StrCat("tcp:", listen[i].address, " (port ", tcp_ports[i], ")",
                                 flags.tls.enabled() ? " with TLS, client certificates required"
                                                     : ""));
  }
  health.SetServingStatus("unwindd.v1.Unwinder", true);
  // --health-listen: a second server with only a health service, which
  // follows the main one's status (a service belongs to one server).
  unwindd::service::HealthService probe_health;
  std::unique_ptr<grpc::Server> probe_server;
  if (!flags.health_listen.empty()) {
    grpc::ServerBuilder probe;
    probe.RegisterService(&probe_health);
    std::vector<int> ports(flags.health_listen.size(), 0);
    for (size_t i = 0; i < flags.health_listen.size(); ++i) {
      probe.AddListeningPort(flags.health_listen[i], grpc::InsecureServerCredentials(),
                             &ports[i]);
    }
    probe_server = probe.BuildAndStart();
    for (size_t i = 0; i < ports.size(); ++i) {
      if (probe_server == nullptr || ports[i] == 0) {
        return Fail(absl::StrCat("cannot listen on tcp:", flags.health_listen[i]));
      }
      where.push_back(absl::StrCat("tcp:", flags.health_listen[i], " (port ", ports[i],
                                   ") for grpc.health.v1 only"));
    }
    probe_health.SetServingStatus("unwindd.v1.Unwinder", true);
  }
  // Where it listens is said before the Unix sockets accept: a caller that
  // finds the server serving there (a supervisor, a test) then finds the
  // TCP port it chose in the log, never a log still without it.
  for (const std::string& w : where) {
    std::fprintf(stderr, "unwindd: listening on %s\n", w.c_str());
  }
  for (auto& l : listeners) l->Start(server.get(), &service.stats().connections);
  for (const ListenAddress& l : listen) {
    if (l.kind == ListenAddress::Kind::kTcp && !flags.tls.enabled()) {
      std::fprintf(stderr,
                   "unwindd: warning: tcp:%s is plain TCP: unencrypted, and its "
                   "callers have no identity; use --tls-cert, --tls-key and "
                   "--tls-client-ca\n",
                   l.address.c_str());
    }
  }
  for (const unwindd::service::TlsRule& r : flags.service.tls_allow) {
    std::fprintf(stderr, "unwindd: TLS identity '%s' may: %s\n", r.identity.c_str(),
                 unwindd::service::PermissionNames(r.permissions).c_str());
  }
  if (flags.tls.enabled() && flags.service.tls_allow.empty()) {
    std::fprintf(stderr,
                 "unwindd: warning: TLS without --tls-allow rules: TCP callers "
                 "may do nothing\n");
  }
  if (flags.service.allow_tcp_unwind_any) {
    std::fprintf(stderr,
                 "unwindd: WARNING: --allow-tcp-unwind-any: every TCP client "
                 "may unwind every process\n");
  }

  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  int sig = 0;
  sigwait(&stop, &sig);
  std::fprintf(stderr, "unwindd: %s, draining\n", strsignal(sig));

  // Health first, for load balancers and probes that watch it.
  health.SetServingStatus(false);
  probe_health.SetServingStatus(false);
  // Handlers refuse new calls with UNAVAILABLE (clients retry them
  // elsewhere); snapshot streams end after their current message.
  service.BeginShutdown();
  for (auto& l : listeners) l->Stop();
  const absl::Time deadline = absl::Now() + flags.drain_timeout;
  if (!service.WaitIdle(deadline)) {
    std::fprintf(stderr, "unwindd: drain timeout; cancelling what still runs\n");
  }
  // Nothing is being worked on: end the streams waiting between messages
  // (UNAVAILABLE, in their trailers) and the health watches, and give the
  // last answers and trailers time to be written.
  const int streams = service.EndIdleStreams();
  if (streams > 0) std::fprintf(stderr, "unwindd: ended %d idle streams\n", streams);
  health.Shutdown();
  probe_health.Shutdown();
  // Until every call has sent its status: a caller behind a proxy that
  // sees the connection close first gets INTERNAL, not UNAVAILABLE. Calls
  // that keep arriving meanwhile are refused at once; kMaxFinishTime bounds it.
  if (!open_calls.WaitNone(absl::Now() + kMaxFinishTime)) {
    std::fprintf(stderr, "unwindd: %d calls still open after %s; exiting\n", open_calls.open(),
                 absl::FormatDuration(kMaxFinishTime).c_str());
  }
  absl::SleepFor(kFlushTime);
  service.FinishShutdown();  // joins the workers: every target detached
  // Then exit without gRPC's own shutdown: it answers the calls that reach
  // it during its shutdown (sent before the client saw its GOAWAY)
  // CANCELLED, a status no client retries, where connections closed by the
  // exit give them UNAVAILABLE, which they retry on another replica. Every
  // call that reached a handler was answered above.
  std::fprintf(stderr, "unwindd: stopped\n");
  std::fflush(nullptr);
  _exit(0);
}

}  // namespace

int main(int argc, char** argv) {
  // Debian builds Abseil without NDEBUG, which turns on absl::Mutex's
  // deadlock detection: a lock-order graph updated on every lock, by our
  // code and gRPC's alike (~1 us of server CPU per snapshot sample). It is
  // a debugging aid; release builds of Abseil leave it off.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  // Snapshot batches arrive as messages of up to kMaxMessageBytes, received
  // into buffers gRPC allocates and frees per message. glibc would mmap and
  // munmap each one past its mmap threshold (128 KiB at first), or give the
  // freed top of a thread's heap back with madvise, so every page of every
  // message was faulted in afresh: ~300k page faults a second, a few us of
  // server CPU per sample, in the batch benchmark. Keep such buffers in the
  // heap (up to glibc's largest threshold, 32 MiB) and keep up to 64 MiB of
  // free heap top instead of trimming it.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 64 << 20);
  // gRPC's default poller on Linux, epoll1, has one thread at a time wait
  // in epoll_wait for every connection; a snapshot stream's data, which
  // arrives in socket-buffer-sized pieces (~200 KiB), is read there and
  // handed to the stream's own thread with a futex wake-up. With "poll",
  // the stream's thread polls its connection itself while it waits in
  // Read(): 3 to 4 context switches per batch of 64 samples instead of 10
  // to 28, and 10-30% less server CPU per sample on replayed recordings
  // (docs/speed.md, "A recording through unwindd"), where a context
  // switch costs this VM more than unwinding a small sample. poll(2) scans
  // its fds, which --max-connections bounds. Read when gRPC initialises,
  // so set before anything of gRPC runs; an operator's own
  // GRPC_POLL_STRATEGY wins.
  setenv("GRPC_POLL_STRATEGY", "poll", /*overwrite=*/0);
  // Before any thread exists, so every thread inherits the mask.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  signal(SIGPIPE, SIG_IGN);

  std::vector<absl::string_view> args(argv + 1, argv + argc);
  absl::StatusOr<unwindd::service::ServerFlags> flags =
      unwindd::service::ParseServerFlags(args);
  if (!flags.ok()) {
    Fail(absl::StrCat(flags.status().message(), " (see 'unwindd --help')"));
    return 2;
  }
  if (flags->help) {
    std::fputs(unwindd::service::kServerUsage, stdout);
    return 0;
  }
  if (flags->version) {
    std::printf("%s\n", unwindd::service::VersionLine("unwindd").c_str());
    return std::fflush(stdout) == 0 ? 0 : 1;
  }
  return Run(*flags);
}
