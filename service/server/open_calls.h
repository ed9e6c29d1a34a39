// The calls the server has begun and not yet finished, counted through
// gRPC's global callbacks for synchronous requests, so that a draining
// server exits only once every call has sent its status, not after a
// fixed wait alone: on a loaded machine a call still answering as the
// drain began could have its status unsent at the exit, and a replica that
// exited then reached a caller behind nginx as INTERNAL ("upstream
// prematurely closed connection") instead of UNAVAILABLE.
//
//   static OpenCalls calls;             // alive until exit
//   grpc::Server::SetGlobalCallbacks(&calls);   // before any server
//   ...
//   calls.WaitNone(absl::Now() + absl::Seconds(2));
#ifndef UNWINDD_SERVICE_SERVER_OPEN_CALLS_H_
#define UNWINDD_SERVICE_SERVER_OPEN_CALLS_H_

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/server.h"

namespace unwindd::service {

class OpenCalls final : public grpc::Server::GlobalCallbacks {
 public:
  // gRPC calls these around each synchronous call's handler; the second
  // once the handler's status has been sent (the handler plucks that op).
  void PreSynchronousRequest(grpc::ServerContext*) override;
  void PostSynchronousRequest(grpc::ServerContext*) override;

  // Waits until no call is open, or until `deadline`; whether none is.
  bool WaitNone(absl::Time deadline);
  int open();

 private:
  absl::Mutex mu_;
  int open_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace unwindd::service

#endif  // UNWINDD_SERVICE_SERVER_OPEN_CALLS_H_
