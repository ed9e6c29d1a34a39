// One gRPC call (one request message, one answer) to a server on this
// machine's Unix socket, without gRPC: HTTP/2 by libnghttp2, on one
// socket, in the calling thread. What `unwind --server=unix:... pid` uses
// (socket_client.h): the gRPC client library costs a one-shot command
// more than the whole unwind (its start-up, its threads and a round trip
// before the request; docs/speed.md).
//
//   absl::StatusOr<std::string> answer = UnixUnaryCall(
//       "/run/unwindd.sock", "/unwindd.v1.Unwinder/UnwindProcess",
//       request.SerializeAsString(), {});
//
// Everything the server sends is checked: an answer over max_answer_bytes,
// a compressed or malformed message, a missing status, or a connection
// that ends early is an error, never more memory or time than asked for.
#ifndef UNWINDD_SERVICE_REMOTE_UNIX_CALL_H_
#define UNWINDD_SERVICE_REMOTE_UNIX_CALL_H_

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "service/remote/call_policy.h"

namespace unwindd::service {

struct UnixCallOptions {
  // The whole call, retries included; sent as grpc-timeout.
  absl::Duration timeout = call_policy::kUnwindDeadline;
  size_t max_answer_bytes = call_policy::kMaxAnswerBytes;
  std::string user_agent = "unwind";
};

// The answer's message bytes, or the call's status: the server's
// grpc-status and grpc-message; UNAVAILABLE when the socket cannot be
// reached or the connection ends before the answer; DEADLINE_EXCEEDED
// after `timeout`; RESOURCE_EXHAUSTED for an answer over the limit;
// INTERNAL for what is not gRPC.
absl::StatusOr<std::string> UnixUnaryCall(const std::string& socket_path,
                                          absl::string_view method, absl::string_view request,
                                          const UnixCallOptions& options);

// The same call, once (no retry), on `fd`: a connected stream socket,
// the caller's (made non-blocking, not closed). For tests and the fuzzer.
absl::StatusOr<std::string> UnaryCallOnSocket(int fd, absl::string_view method,
                                              absl::string_view request,
                                              const UnixCallOptions& options,
                                              absl::Time deadline);

// gRPC's status for an HTTP status other than 200 (gRPC's
// doc/http-grpc-status-mapping.md).
absl::StatusCode StatusOfHttp(int http_status);

// grpc-message's percent-encoding undone (gRPC's PROTOCOL-HTTP2.md): %XX
// is the byte XX; anything else, a malformed escape included, is kept.
std::string PercentDecode(absl::string_view s);

}  // namespace unwindd::service

#endif  // UNWINDD_SERVICE_REMOTE_UNIX_CALL_H_
