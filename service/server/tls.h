// TLS with client certificates for unwindd's TCP listeners, and what each
// certificate may do. Plain TCP callers have no identity (auth.h); with
// --tls-cert, --tls-key and --tls-client-ca every TCP connection must
// present a certificate signed by the client CA (gRPC's SSL credentials,
// GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY: the handshake
// fails without one), and the certificate's names — its subject alternative
// names and its common name, as gRPC's AuthContext reports them — pick a
// --tls-allow rule: IDENTITY=PERMISSIONS.
//
//   absl::StatusOr<TlsRule> r = ParseTlsRule("profiler=snapshots,cores");
//   absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> creds =
//       TlsServerCredentials(files);           // at start-up, as root
//   builder.AddListeningPort("0.0.0.0:7070", *creds);
//   ... per call, on a TCP caller:
//   absl::Status s = ApplyTlsIdentity(*context->auth_context(), rules, &caller);
#ifndef UNWINDD_SERVICE_SERVER_TLS_H_
#define UNWINDD_SERVICE_SERVER_TLS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "grpcpp/security/auth_context.h"
#include "grpcpp/security/server_credentials.h"
#include "service/server/auth.h"

namespace unwindd::service {

// --tls-allow=IDENTITY=PERMISSIONS, e.g. "profiler=snapshots,cores".
struct TlsRule {
  std::string identity;  // a SAN or the CN of a client certificate, exactly
  uint32_t permissions = 0;  // Permission bits; "none" is 0
  std::string text;          // as given, for messages
};

// The PEM files of --tls-cert, --tls-key and --tls-client-ca.
struct TlsFiles {
  std::string cert;       // the server's certificate (chain)
  std::string key;        // its private key
  std::string client_ca;  // the CA(s) client certificates must chain to
  bool enabled() const { return !cert.empty(); }
};

// The longest identity and the most rules accepted; PEM files larger than
// kMaxPemBytes are refused (a certificate chain is a few KiB).
inline constexpr size_t kMaxTlsIdentityBytes = 1024;
inline constexpr size_t kMaxTlsRules = 4096;
inline constexpr size_t kMaxPemBytes = 1 << 20;

// Parses IDENTITY=PERMISSIONS: PERMISSIONS is "none" or a comma-separated
// list of snapshots, cores, processes. The identity is what precedes the
// last '=' (so it may hold one). InvalidArgument with a one-line message.
absl::StatusOr<TlsRule> ParseTlsRule(absl::string_view text);

// "snapshots,cores", "none".
std::string PermissionNames(uint32_t permissions);

// Reads the three PEM files and builds gRPC's SSL server credentials that
// require and verify a client certificate.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> TlsServerCredentials(
    const TlsFiles& files);

// Turns a TCP `caller` into a TLS one from the call's `auth`: its
// certificate's names (every x509_subject_alternative_name, then
// x509_common_name) matched against `rules`. The caller gets the union of
// the permissions of every rule naming one of them (the CA vouched for all
// of its names), and none when no rule does. Unauthenticated if the call
// carries no verified certificate (it cannot happen on a TLS listener;
// checked all the same).
absl::Status ApplyTlsIdentity(const grpc::AuthContext& auth,
                              const std::vector<TlsRule>& rules, Caller* caller);

}  // namespace unwindd::service

#endif  // UNWINDD_SERVICE_SERVER_TLS_H_
