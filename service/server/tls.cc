#include "service/server/tls.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "grpc/grpc_security_constants.h"
#include "memory/scoped_fd.h"

namespace unwindd::service {
namespace {

struct PermissionName {
  const char* name;
  Permission bit;
};
constexpr PermissionName kPermissionNames[] = {
    {"snapshots", kPermitSnapshots},
    {"cores", kPermitCores},
    {"processes", kPermitProcesses},
};

// A PEM file named on the command line: regular, at most kMaxPemBytes, and
// PEM (RFC 7468 §2: "-----BEGIN " label lines), so a wrong path fails here
// with its name rather than inside gRPC's handshake code.
absl::StatusOr<std::string> ReadPem(const std::string& path, absl::string_view flag) {
  memory::ScopedFd fd = memory::OpenCloexec(path.c_str(), O_RDONLY | O_NOCTTY | O_NONBLOCK);
  if (!fd.valid()) {
    return absl::ErrnoToStatus(errno, absl::StrCat(flag, ": open ", path));
  }
  struct stat st;
  if (fstat(fd.get(), &st) != 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat(flag, ": fstat ", path));
  }
  if (!S_ISREG(st.st_mode) || st.st_size <= 0 ||
      static_cast<uint64_t>(st.st_size) > kMaxPemBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        flag, ": ", path, " is not a regular file of 1 to ", kMaxPemBytes, " bytes"));
  }
  std::string out(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  while (got < out.size()) {
    ssize_t n = read(fd.get(), out.data() + got, out.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return absl::ErrnoToStatus(errno, absl::StrCat(flag, ": read ", path));
    if (n == 0) break;  // shrank meanwhile
    got += static_cast<size_t>(n);
  }
  out.resize(got);
  if (!absl::StrContains(out, "-----BEGIN ")) {
    return absl::InvalidArgumentError(absl::StrCat(flag, ": ", path, " is not PEM"));
  }
  return out;
}

}  // namespace

absl::StatusOr<TlsRule> ParseTlsRule(absl::string_view text) {
  const size_t eq = text.rfind('=');
  if (eq == absl::string_view::npos || eq == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "invalid --tls-allow '", text.substr(0, 128),
        "' (IDENTITY=PERMISSIONS, e.g. profiler=snapshots,cores)"));
  }
  TlsRule rule;
  rule.identity = std::string(text.substr(0, eq));
  rule.text = std::string(text);
  if (rule.identity.size() > kMaxTlsIdentityBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--tls-allow identity longer than ", kMaxTlsIdentityBytes, " bytes"));
  }
  absl::string_view perms = text.substr(eq + 1);
  if (perms == "none") return rule;
  for (absl::string_view p : absl::StrSplit(perms, ',')) {
    bool known = false;
    for (const PermissionName& n : kPermissionNames) {
      if (p == n.name) {
        rule.permissions |= n.bit;
        known = true;
      }
    }
    if (!known) {
      return absl::InvalidArgumentError(absl::StrCat(
          "invalid --tls-allow permission '", p.substr(0, 64),
          "' (snapshots, cores, processes, or none)"));
    }
  }
  return rule;
}

std::string PermissionNames(uint32_t permissions) {
  std::vector<absl::string_view> names;
  for (const PermissionName& n : kPermissionNames) {
    if ((permissions & n.bit) != 0) names.push_back(n.name);
  }
  return names.empty() ? "none" : absl::StrJoin(names, ",");
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> TlsServerCredentials(
    const TlsFiles& files) {
  absl::StatusOr<std::string> cert = ReadPem(files.cert, "--tls-cert");
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key = ReadPem(files.key, "--tls-key");
  if (!key.ok()) return key.status();
  absl::StatusOr<std::string> ca = ReadPem(files.client_ca, "--tls-client-ca");
  if (!ca.ok()) return ca.status();
  grpc::SslServerCredentialsOptions options(
      GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  options.pem_root_certs = *std::move(ca);
  options.pem_key_cert_pairs.push_back({*std::move(key), *std::move(cert)});
  return grpc::SslServerCredentials(options);
}

absl::Status ApplyTlsIdentity(const grpc::AuthContext& auth,
                              const std::vector<TlsRule>& rules, Caller* caller) {
  std::vector<grpc::string_ref> type =
      auth.FindPropertyValues(GRPC_TRANSPORT_SECURITY_TYPE_PROPERTY_NAME);
  if (!auth.IsPeerAuthenticated() || type.size() != 1 ||
      absl::string_view(type[0].data(), type[0].size()) != GRPC_SSL_TRANSPORT_SECURITY_TYPE) {
    return absl::UnauthenticatedError(absl::StrCat(
        "TCP call from ", caller->peer, " without a verified client certificate"));
  }
  // SANs first (what RFC 6125 §6.4.4 prefers over the CN), then the CN.
  std::vector<std::string> names;
  for (const char* property : {GRPC_X509_SAN_PROPERTY_NAME, GRPC_X509_CN_PROPERTY_NAME}) {
    for (const grpc::string_ref& v : auth.FindPropertyValues(property)) {
      if (names.size() >= 64) break;  // a certificate's names, bounded
      std::string name(v.data(), std::min<size_t>(v.size(), kMaxTlsIdentityBytes));
      if (std::find(names.begin(), names.end(), name) == names.end()) {
        names.push_back(std::move(name));
      }
    }
  }
  caller->tls = true;
  caller->unrestricted = false;
  caller->permissions = 0;
  std::vector<absl::string_view> matched;
  std::vector<absl::string_view> matched_rules;
  for (const TlsRule& r : rules) {
    if (std::find(names.begin(), names.end(), r.identity) == names.end()) continue;
    caller->permissions |= r.permissions;
    if (std::find(matched.begin(), matched.end(), r.identity) == matched.end()) {
      matched.push_back(r.identity);
    }
    matched_rules.push_back(r.text);
  }
  if (matched.empty()) {
    caller->identity = names.empty() ? "(no name)" : absl::StrJoin(names, ",");
    caller->rule.clear();
  } else {
    caller->identity = absl::StrJoin(matched, ",");
    caller->rule = absl::StrJoin(matched_rules, " --tls-allow=");
  }
  return absl::OkStatus();
}

}  // namespace unwindd::service
