#include "service/server/health.h"

namespace unwindd::service {

using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;

HealthService::HealthService(absl::Duration poll) : poll_(poll) {
  serving_[""] = true;
}

void HealthService::SetServingStatus(const std::string& service, bool serving) {
  absl::MutexLock l(&mu_);
  if (shutdown_) return;
  serving_[service] = serving;
  ++version_;
}

void HealthService::SetServingStatus(bool serving) {
  absl::MutexLock l(&mu_);
  if (shutdown_) return;
  for (auto& [name, s] : serving_) s = serving;
  ++version_;
}

void HealthService::Shutdown() {
  absl::MutexLock l(&mu_);
  for (auto& [name, s] : serving_) s = false;
  shutdown_ = true;
  ++version_;
}

HealthService::Status HealthService::StatusOf(const std::string& service) const {
  auto it = serving_.find(service);
  if (it == serving_.end()) return HealthCheckResponse::SERVICE_UNKNOWN;
  return it->second ? HealthCheckResponse::SERVING : HealthCheckResponse::NOT_SERVING;
}

grpc::Status HealthService::Check(grpc::ServerContext* context,
                                  const HealthCheckRequest* request,
                                  HealthCheckResponse* response) {
  absl::MutexLock l(&mu_);
  Status s = StatusOf(request->service());
  if (s == HealthCheckResponse::SERVICE_UNKNOWN) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND, "service name unknown");
  }
  response->set_status(s);
  return grpc::Status::OK;
}

grpc::Status HealthService::Watch(grpc::ServerContext* context,
                                  const HealthCheckRequest* request,
                                  grpc::ServerWriter<HealthCheckResponse>* writer) {
  uint64_t seen = 0;
  bool first = true;
  Status last = HealthCheckResponse::UNKNOWN;
  while (true) {
    Status now;
    bool ended;
    {
      absl::MutexLock l(&mu_);
      auto changed = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
        return first || version_ != seen;
      };
      mu_.AwaitWithTimeout(absl::Condition(&changed), poll_);
      seen = version_;
      now = StatusOf(request->service());
      ended = shutdown_;
    }
    if (first || now != last) {
      HealthCheckResponse response;
      response.set_status(now);
      if (!writer->Write(response)) return grpc::Status::CANCELLED;
      last = now;
      first = false;
    }
    if (ended) return grpc::Status::OK;
    if (context->IsCancelled()) return grpc::Status::CANCELLED;
  }
}

}  // namespace unwindd::service
