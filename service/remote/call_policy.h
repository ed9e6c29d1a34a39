// How both clients of `unwind --server` treat a call: unwind_remote's gRPC
// channel (channel.h) and the socket client's HTTP/2 call (unix_call.h).
// One policy, so that the two cannot drift apart.
//
//   UnixCallOptions o;  // its defaults are these
//   args.SetMaxReceiveMessageSize(call_policy::kMaxAnswerBytes);
#ifndef UNWINDD_SERVICE_REMOTE_CALL_POLICY_H_
#define UNWINDD_SERVICE_REMOTE_CALL_POLICY_H_

#include <cstddef>

#include "absl/time/time.h"

namespace unwindd::service::call_policy {

// A call that fails with UNAVAILABLE (no server yet, a refused or broken
// connection, a draining replica) is made up to kAttempts times, the
// first retry kInitialBackoff later, each wait kBackoffMultiplier times
// the one before, at most kMaxBackoff; never once an answer has begun.
inline constexpr int kAttempts = 5;
inline constexpr absl::Duration kInitialBackoff = absl::Milliseconds(100);
inline constexpr int kBackoffMultiplier = 2;
inline constexpr absl::Duration kMaxBackoff = absl::Seconds(1);

// The largest answer taken.
inline constexpr size_t kMaxAnswerBytes = size_t{64} << 20;

// An unwind call's deadline (UnwindProcess).
inline constexpr absl::Duration kUnwindDeadline = absl::Seconds(60);

}  // namespace unwindd::service::call_policy

#endif  // UNWINDD_SERVICE_REMOTE_CALL_POLICY_H_
