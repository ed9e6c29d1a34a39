#include "service/remote/channel.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "grpc/impl/codegen/grpc_types.h"
#include "service/remote/call_policy.h"

namespace unwindd::service {

// gRPC service config (gRPC's doc/service_config.md, A6 for retries):
// every method of unwindd.v1.Unwinder may be retried on UNAVAILABLE, which
// is what a draining replica answers (and what a refused or broken
// connection gives); a call is never retried after its response began, so
// an answer is never duplicated. Snapshot streams are retried only until
// their first response; after that their client reopens them (fleet.md).
// The numbers are call_policy.h's, which the socket client follows too.
std::string RemoteServiceConfig() {
  return absl::StrFormat(R"json({
  "loadBalancingConfig": [{"round_robin": {}}],
  "methodConfig": [{
    "name": [{"service": "unwindd.v1.Unwinder"}],
    "retryPolicy": {
      "maxAttempts": %d,
      "initialBackoff": "%gs",
      "maxBackoff": "%gs",
      "backoffMultiplier": %d,
      "retryableStatusCodes": ["UNAVAILABLE"]
    }
  }]
})json",
                         call_policy::kAttempts,
                         absl::ToDoubleSeconds(call_policy::kInitialBackoff),
                         absl::ToDoubleSeconds(call_policy::kMaxBackoff),
                         call_policy::kBackoffMultiplier);
}

absl::StatusOr<std::string> RemoteTarget(absl::string_view address) {
  for (absl::string_view scheme : {"unix:", "dns:", "ipv4:", "ipv6:"}) {
    if (absl::StartsWith(address, scheme) && address.size() > scheme.size()) {
      return std::string(address);
    }
  }
  if (absl::ConsumePrefix(&address, "tcp:") && absl::StrContains(address, ':')) {
    return std::string(address);
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "invalid --server '", address,
      "' (unix:PATH, tcp:HOST:PORT, dns:///NAME:PORT or ipv4:ADDR:PORT,...)"));
}

grpc::ChannelArguments RemoteChannelArguments() {
  grpc::ChannelArguments args;
  args.SetServiceConfigJSON(RemoteServiceConfig());
  // A name's addresses may change as replicas come and go; the config is
  // ours, not one a DNS TXT record could substitute.
  args.SetInt(GRPC_ARG_SERVICE_CONFIG_DISABLE_RESOLUTION, 1);
  args.SetInt(GRPC_ARG_PER_RPC_RETRY_BUFFER_SIZE, 64 << 20);
  args.SetMaxReceiveMessageSize(static_cast<int>(call_policy::kMaxAnswerBytes));
  return args;
}

}  // namespace unwindd::service
