#include "service/server/open_calls.h"

namespace unwindd::service {

void OpenCalls::PreSynchronousRequest(grpc::ServerContext*) {
  absl::MutexLock l(&mu_);
  ++open_;
}

void OpenCalls::PostSynchronousRequest(grpc::ServerContext*) {
  absl::MutexLock l(&mu_);
  --open_;
}

bool OpenCalls::WaitNone(absl::Time deadline) {
  absl::MutexLock l(&mu_);
  auto none = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return open_ == 0; };
  return mu_.AwaitWithDeadline(absl::Condition(&none), deadline);
}

int OpenCalls::open() {
  absl::MutexLock l(&mu_);
  return open_;
}

}  // namespace unwindd::service
