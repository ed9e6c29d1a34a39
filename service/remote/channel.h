// How `unwind --server=ADDRESS` (unwind_remote) reaches unwindd: the gRPC
// target an --server address names, and the channel arguments that spread
// calls over every replica a name resolves to and retry the ones a
// draining or unreachable replica refuses (docs/fleet.md "Clients").
//
//   absl::StatusOr<std::string> t = RemoteTarget("dns:///unwindd.example:7070");
//   auto channel = grpc::CreateCustomChannel(*t, creds, RemoteChannelArguments());
#ifndef UNWINDD_SERVICE_REMOTE_CHANNEL_H_
#define UNWINDD_SERVICE_REMOTE_CHANNEL_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "grpcpp/support/channel_arguments.h"

namespace unwindd::service {

// unix:PATH, dns:[//AUTHORITY/]HOST:PORT, ipv4:ADDR:PORT[,ADDR:PORT]... and
// ipv6:[ADDR]:PORT[,...] stay as they are (gRPC's own syntax);
// tcp:HOST:PORT becomes HOST:PORT. InvalidArgument otherwise.
absl::StatusOr<std::string> RemoteTarget(absl::string_view address);

// round_robin over every address of the target, and the retries of
// call_policy.h (up to 5 attempts of a call that fails with UNAVAILABLE,
// backoff 0.1 s doubling to 1 s) on another replica; a streamed core is
// kept for a retry up to 64 MiB.
std::string RemoteServiceConfig();
grpc::ChannelArguments RemoteChannelArguments();

}  // namespace unwindd::service

#endif  // UNWINDD_SERVICE_REMOTE_CHANNEL_H_
