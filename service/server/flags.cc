#include "service/server/flags.h"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"

namespace unwindd::service {

const char kServerUsage[] =
    "usage: unwindd [--listen=unix:PATH | --listen=tcp:HOST:PORT]...\n"
    "  --listen=unix:PATH          Unix socket (default unix:/run/unwindd.sock,\n"
    "                              or the sockets systemd passes: LISTEN_FDS);\n"
    "                              callers identified by SO_PEERCRED\n"
    "  --listen=tcp:HOST:PORT      TCP, only if asked for: callers have no uid and\n"
    "                              may not unwind processes unless\n"
    "  --allow-tcp-unwind-any      DANGEROUS: any TCP client may read any process\n"
    "                              this server can ptrace, and open files as root;\n"
    "                              use TLS with client certificates instead:\n"
    "  --tls-cert=PEM --tls-key=PEM  TCP listeners use TLS with this certificate\n"
    "  --tls-client-ca=PEM         and require client certificates signed by\n"
    "                              this CA (all three together)\n"
    "  --tls-allow=ID=PERMS        what a client certificate whose SAN or CN is ID\n"
    "                              may do (repeatable): PERMS is none or a list of\n"
    "                              snapshots,cores,processes; unlisted: nothing\n"
    "  --health-listen=tcp:HOST:PORT  plain TCP serving only grpc.health.v1\n"
    "                              (probes that cannot present a client\n"
    "                              certificate, e.g. kubelet's gRPC probes)\n"
    "  --socket-mode=0660          mode of the socket file (octal)\n"
    "  --socket-group=GROUP        group of the socket file\n"
    "  --max-connections=1024      Unix connections at once\n"
    "  --keep-capabilities         keep every capability it starts with (default:\n"
    "                              only cap_sys_ptrace, cap_setuid, cap_setgid,\n"
    "                              cap_dac_read_search, cap_checkpoint_restore)\n"
    "  --workers=N                 unwinds running at once (default: CPUs, >= 2)\n"
    "  --max-queued=256            unwinds waiting; more get RESOURCE_EXHAUSTED\n"
    "  --request-timeout=30        seconds per request (per sample, per batch) at most\n"
    "  --max-frames=4096           frames per thread at most (default 512)\n"
    "  --stop-timeout=1            seconds UnwindProcess waits for a thread to stop;\n"
    "                              one that has not (uninterruptible sleep) is walked\n"
    "                              from /proc/PID/task/TID/syscall (0: wait for it)\n"
    "  --max-core-bytes=N          largest streamed core (default 1 GiB)\n"
    "  --max-stack-bytes=N         largest snapshot stack copy (default 1 MiB)\n"
    "  --max-samples-per-stream=N  samples per UnwindSnapshots stream\n"
    "  --max-mapping-tables=1024   mapping tables a snapshot stream keeps\n"
    "  --max-mapping-table-bytes=N bytes of them per stream (default 64 MiB)\n"
    "  --module-cache-bytes=N      module cache budget (default 4 GiB, mapped)\n"
    "  --request-log=-|none|PATH   one JSON line per request (default stderr)\n"
    "  --drain-timeout=10          seconds SIGTERM waits for running requests\n"
    "                              (health NOT_SERVING at once; new calls get\n"
    "                              UNAVAILABLE; streams end UNAVAILABLE after\n"
    "                              their current message)\n"
    "  --max-connection-age=120    seconds a client connection lives (+-10%),\n"
    "                              then GOAWAY: clients reconnect and rebalance;\n"
    "                              snapshot streams older end, after their\n"
    "                              current message, UNAVAILABLE; 0: forever\n"
    "  --max-connection-age-grace=30  seconds calls still running then get\n"
    "                              before the connection closes\n"
    "  --debug-dir=DIR             separate debug files (repeatable; default\n"
    "                              /usr/lib/debug); requests may name others\n"
    "  --debuginfod=URL            debuginfod servers for requests that ask\n"
    "                              (repeatable; off by default, whatever\n"
    "                              DEBUGINFOD_URLS says); cache: its own\n"
    "  --debuginfod-timeout=30     seconds per fetch at most\n"
    "  --debuginfod-max-bytes=N    largest file fetched (default 1 GiB)\n"
    "  --version                   print the version and the commit it was built\n"
    "                              from\n"
    "  -h, --help                  this text\n";

namespace {

absl::Status Bad(absl::string_view msg) { return absl::InvalidArgumentError(msg); }

template <typename T>
absl::Status Number(absl::string_view flag, absl::string_view v, T min, T max, T* out) {
  uint64_t n = 0;
  if (!absl::SimpleAtoi(v, &n) || n < static_cast<uint64_t>(min) ||
      n > static_cast<uint64_t>(max)) {
    return Bad(absl::StrCat("invalid ", flag, " '", v, "' (", min, "..", max, ")"));
  }
  *out = static_cast<T>(n);
  return absl::OkStatus();
}

// The TLS flags go together, and only with a TCP listener; a TLS server
// has no use for --allow-tcp-unwind-any (the rules say who may do what).
absl::Status CheckTlsFlags(const ServerFlags& f) {
  const bool any = !f.tls.cert.empty() || !f.tls.key.empty() || !f.tls.client_ca.empty();
  if (!any) {
    if (!f.service.tls_allow.empty()) {
      return Bad("--tls-allow needs --tls-cert, --tls-key and --tls-client-ca");
    }
    return absl::OkStatus();
  }
  if (f.tls.cert.empty() || f.tls.key.empty() || f.tls.client_ca.empty()) {
    return Bad("--tls-cert, --tls-key and --tls-client-ca go together");
  }
  bool tcp = false;
  for (const ListenAddress& l : f.listen) tcp |= l.kind == ListenAddress::Kind::kTcp;
  if (!tcp) return Bad("the --tls-* flags need a --listen=tcp:HOST:PORT");
  if (f.service.allow_tcp_unwind_any) {
    return Bad("--allow-tcp-unwind-any with TLS: grant 'processes' with --tls-allow "
               "to the certificates that need it instead");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ServerFlags> ParseServerFlags(absl::Span<const absl::string_view> args) {
  ServerFlags f;
  f.service.workers = std::max(2u, std::thread::hardware_concurrency());
  bool debug_dirs_given = false;
  for (absl::string_view a : args) {
    absl::Status s;
    int seconds = 0;
    if (a == "-h" || a == "--help") {
      f.help = true;
      return f;
    } else if (a == "--version") {
      f.version = true;
      return f;
    } else if (absl::ConsumePrefix(&a, "--listen=")) {
      ListenAddress l;
      if (absl::ConsumePrefix(&a, "unix:") && !a.empty()) {
        l.kind = ListenAddress::Kind::kUnix;
      } else if (absl::ConsumePrefix(&a, "tcp:") && absl::StrContains(a, ':')) {
        l.kind = ListenAddress::Kind::kTcp;
      } else {
        return Bad(absl::StrCat("invalid --listen '", a,
                                "' (unix:PATH or tcp:HOST:PORT)"));
      }
      l.address = std::string(a);
      f.listen.push_back(std::move(l));
    } else if (absl::ConsumePrefix(&a, "--health-listen=")) {
      if (!absl::ConsumePrefix(&a, "tcp:") || !absl::StrContains(a, ':')) {
        return Bad(absl::StrCat("invalid --health-listen '", a, "' (tcp:HOST:PORT)"));
      }
      f.health_listen.push_back(std::string(a));
    } else if (a == "--keep-capabilities") {
      f.keep_capabilities = true;
    } else if (a == "--allow-tcp-unwind-any") {
      f.service.allow_tcp_unwind_any = true;
    } else if (absl::ConsumePrefix(&a, "--tls-cert=")) {
      f.tls.cert = std::string(a);
    } else if (absl::ConsumePrefix(&a, "--tls-key=")) {
      f.tls.key = std::string(a);
    } else if (absl::ConsumePrefix(&a, "--tls-client-ca=")) {
      f.tls.client_ca = std::string(a);
    } else if (absl::ConsumePrefix(&a, "--tls-allow=")) {
      absl::StatusOr<TlsRule> rule = ParseTlsRule(a);
      if (!rule.ok()) return rule.status();
      if (f.service.tls_allow.size() >= kMaxTlsRules) {
        return Bad(absl::StrCat("more than ", kMaxTlsRules, " --tls-allow rules"));
      }
      for (const TlsRule& r : f.service.tls_allow) {
        if (r.identity == rule->identity) {
          return Bad(absl::StrCat("two --tls-allow rules for '", r.identity, "'"));
        }
      }
      f.service.tls_allow.push_back(*std::move(rule));
    } else if (absl::ConsumePrefix(&a, "--socket-mode=")) {
      unsigned mode = 0;
      bool octal = !a.empty() && a.size() <= 4;
      for (char c : a) {
        octal &= c >= '0' && c <= '7';
        mode = mode * 8 + (c - '0');
      }
      if (!octal || mode > 0777) {
        return Bad(absl::StrCat("invalid --socket-mode '", a, "' (octal)"));
      }
      f.socket_mode = mode;
    } else if (absl::ConsumePrefix(&a, "--socket-group=")) {
      f.socket_group = std::string(a);
    } else if (absl::ConsumePrefix(&a, "--max-connections=")) {
      s = Number<size_t>("--max-connections", a, 1, 1 << 20, &f.max_connections);
    } else if (absl::ConsumePrefix(&a, "--workers=")) {
      s = Number<int>("--workers", a, 1, 1024, &f.service.workers);
    } else if (absl::ConsumePrefix(&a, "--max-queued=")) {
      s = Number<int>("--max-queued", a, 0, 1 << 20, &f.service.max_queued);
    } else if (absl::ConsumePrefix(&a, "--request-timeout=")) {
      s = Number<int>("--request-timeout", a, 1, 86400, &seconds);
      f.service.max_request_time = absl::Seconds(seconds);
    } else if (absl::ConsumePrefix(&a, "--stop-timeout=")) {
      double d = 0;
      if (!absl::SimpleAtod(a, &d) || !(d >= 0) || d > 86400) {
        s = absl::InvalidArgumentError(absl::StrCat("invalid --stop-timeout '", a, "'"));
      } else {
        f.service.stop_timeout = d == 0 ? absl::InfiniteDuration() : absl::Seconds(d);
      }
    } else if (absl::ConsumePrefix(&a, "--max-frames=")) {
      s = Number<int>("--max-frames", a, 1, unwinder::kMaxMaxFrames,
                      &f.service.max_frames);
    } else if (absl::ConsumePrefix(&a, "--max-core-bytes=")) {
      s = Number<uint64_t>("--max-core-bytes", a, 1, uint64_t{1} << 40,
                           &f.service.max_core_bytes);
      f.service.max_core_bytes_in_flight =
          std::max(f.service.max_core_bytes_in_flight, f.service.max_core_bytes);
    } else if (absl::ConsumePrefix(&a, "--max-stack-bytes=")) {
      s = Number<uint64_t>("--max-stack-bytes", a, 1, 64 << 20,
                           &f.service.snapshot.max_stack_bytes);
    } else if (absl::ConsumePrefix(&a, "--max-samples-per-stream=")) {
      s = Number<uint64_t>("--max-samples-per-stream", a, 1, UINT64_MAX,
                           &f.service.max_samples_per_stream);
    } else if (absl::ConsumePrefix(&a, "--max-mapping-tables=")) {
      s = Number<int>("--max-mapping-tables", a, 1, 1 << 20,
                      &f.service.snapshot.max_tables);
    } else if (absl::ConsumePrefix(&a, "--max-mapping-table-bytes=")) {
      s = Number<uint64_t>("--max-mapping-table-bytes", a, 1 << 10, uint64_t{1} << 40,
                           &f.service.snapshot.max_table_bytes);
    } else if (absl::ConsumePrefix(&a, "--module-cache-bytes=")) {
      s = Number<uint64_t>("--module-cache-bytes", a, 1 << 20, UINT64_MAX,
                           &f.service.module_cache_bytes);
    } else if (absl::ConsumePrefix(&a, "--request-log=")) {
      if (a.empty()) return Bad("empty --request-log");
      f.request_log = std::string(a);
    } else if (absl::ConsumePrefix(&a, "--drain-timeout=")) {
      s = Number<int>("--drain-timeout", a, 0, 3600, &seconds);
      f.drain_timeout = absl::Seconds(seconds);
    } else if (absl::ConsumePrefix(&a, "--max-connection-age=")) {
      s = Number<int>("--max-connection-age", a, 0, 86400, &seconds);
      f.max_connection_age = absl::Seconds(seconds);
    } else if (absl::ConsumePrefix(&a, "--max-connection-age-grace=")) {
      s = Number<int>("--max-connection-age-grace", a, 0, 86400, &seconds);
      f.max_connection_age_grace = absl::Seconds(seconds);
    } else if (absl::ConsumePrefix(&a, "--debug-dir=")) {
      if (a.empty() || a[0] != '/') return Bad("--debug-dir takes an absolute path");
      if (!debug_dirs_given) f.service.debug_dirs.clear();
      debug_dirs_given = true;
      f.service.debug_dirs.push_back(std::string(a));
    } else if (absl::ConsumePrefix(&a, "--debuginfod=")) {
      if (a.empty()) return Bad("empty --debuginfod URL");
      std::string& urls = f.service.debuginfod.urls;
      if (!urls.empty()) urls += " ";
      absl::StrAppend(&urls, a);
    } else if (absl::ConsumePrefix(&a, "--debuginfod-timeout=")) {
      s = Number<int>("--debuginfod-timeout", a, 1, 3600, &seconds);
      f.service.debuginfod.timeout = absl::Seconds(seconds);
    } else if (absl::ConsumePrefix(&a, "--debuginfod-max-bytes=")) {
      s = Number<uint64_t>("--debuginfod-max-bytes", a, 1, UINT64_MAX,
                           &f.service.debuginfod.max_bytes);
    } else {
      return Bad(absl::StrCat("unknown argument '", a, "'"));
    }
    if (!s.ok()) return s;
  }
  f.service.default_frames =
      std::min(f.service.default_frames, f.service.max_frames);
  f.service.max_stream_age = f.max_connection_age;
  if (f.listen.empty()) {
    f.listen.push_back({ListenAddress::Kind::kUnix, "/run/unwindd.sock"});
    f.listen_is_default = true;
  }
  absl::Status tls = CheckTlsFlags(f);
  if (!tls.ok()) return tls;
  f.service.tls = f.tls.enabled();
  return f;
}

}  // namespace unwindd::service
