// unwindd's command line, parsed apart from main() so it can be tested.
//
//   absl::StatusOr<ServerFlags> f = ParseServerFlags({"--listen=unix:/tmp/s"});
#ifndef UNWINDD_SERVICE_SERVER_FLAGS_H_
#define UNWINDD_SERVICE_SERVER_FLAGS_H_

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "service/server/service.h"
#include "service/server/tls.h"

namespace unwindd::service {

struct ListenAddress {
  enum class Kind { kUnix, kTcp };
  Kind kind = Kind::kUnix;
  std::string address;  // a path, or HOST:PORT as gRPC takes it
};

struct ServerFlags {
  std::vector<ListenAddress> listen;  // default: unix:/run/unwindd.sock
  // No --listen was given: `listen` holds the default, which sockets
  // inherited from systemd replace (activation.h).
  bool listen_is_default = false;
  // --health-listen: HOST:PORT of plain TCP listeners that serve only
  // grpc.health.v1.Health (no unwinding), for probes without TLS.
  std::vector<std::string> health_listen;
  // Keep every capability unwindd starts with, rather than only those it
  // needs (capabilities.h).
  bool keep_capabilities = false;
  mode_t socket_mode = 0660;
  std::string socket_group;  // empty: the server's group
  size_t max_connections = 1024;
  std::string request_log = "-";  // "-": stderr, "none", or a file
  absl::Duration drain_timeout = absl::Seconds(10);
  // HTTP/2 connection lifetime (gRPC's max connection age, +-10% jitter):
  // then GOAWAY, so clients re-resolve and spread their calls over the
  // replicas; calls still running get `max_connection_age_grace` before the
  // connection closes. A snapshot stream older than the age ends after its
  // current message with UNAVAILABLE (docs/fleet.md "Stream lifetime").
  // Zero: no limit.
  absl::Duration max_connection_age = absl::Seconds(120);
  absl::Duration max_connection_age_grace = absl::Seconds(30);
  ServiceOptions service;
  // --tls-cert, --tls-key, --tls-client-ca: every TCP listener uses TLS and
  // requires a client certificate (tls.h); the rules are service.tls_allow.
  TlsFiles tls;
  bool help = false;
  bool version = false;  // --version
};

extern const char kServerUsage[];

// `args` excludes argv[0]. InvalidArgument with a one-line message.
absl::StatusOr<ServerFlags> ParseServerFlags(absl::Span<const absl::string_view> args);

}  // namespace unwindd::service

#endif  // UNWINDD_SERVICE_SERVER_FLAGS_H_
