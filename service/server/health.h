// grpc.health.v1.Health on gRPC's synchronous API, instead of gRPC's own
// (grpc::EnableDefaultHealthCheckService), which is written against the
// callback API: registering any callback method makes gRPC start its
// callback pollers ("nexting_thread"), which then poll every connection
// too and hand each message of a snapshot stream over to the stream's own
// thread — about 5 µs of server CPU per sample (docs/speed.md). With only
// synchronous services the stream's thread reads its own messages.
//
//   HealthService health;                        // "" is SERVING
//   builder.RegisterService(&health);
//   health.SetServingStatus("unwindd.v1.Unwinder", true);
//   ... on SIGTERM: health.SetServingStatus(false); ... health.Shutdown();
//
// Semantics are gRPC's default service's: Check answers NOT_FOUND for a
// service never named; Watch sends the status at once (SERVICE_UNKNOWN for
// an unknown service) and again whenever it changes, until the client
// cancels or Shutdown. A Watch holds one of gRPC's synchronous threads
// while it lasts, as an idle UnwindSnapshots stream does (both bounded by
// the server's thread quota).
#ifndef UNWINDD_SERVICE_SERVER_HEALTH_H_
#define UNWINDD_SERVICE_SERVER_HEALTH_H_

#include <cstdint>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "proto/grpc/health/v1/health.grpc.pb.h"

namespace unwindd::service {

class HealthService final : public grpc::health::v1::Health::Service {
 public:
  // How often a Watch looks whether its client has gone.
  explicit HealthService(absl::Duration poll = absl::Milliseconds(100));

  void SetServingStatus(const std::string& service, bool serving);
  // Every service named so far, and "" (draining: false).
  void SetServingStatus(bool serving);
  // NOT_SERVING for all, later changes ignored, every Watch ended.
  void Shutdown();

  grpc::Status Check(grpc::ServerContext* context,
                     const grpc::health::v1::HealthCheckRequest* request,
                     grpc::health::v1::HealthCheckResponse* response) override;
  grpc::Status Watch(
      grpc::ServerContext* context,
      const grpc::health::v1::HealthCheckRequest* request,
      grpc::ServerWriter<grpc::health::v1::HealthCheckResponse>* writer) override;

 private:
  using Status = grpc::health::v1::HealthCheckResponse::ServingStatus;
  Status StatusOf(const std::string& service) const ABSL_SHARED_LOCKS_REQUIRED(mu_);

  const absl::Duration poll_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, bool> serving_ ABSL_GUARDED_BY(mu_);
  uint64_t version_ ABSL_GUARDED_BY(mu_) = 0;  // bumped by every change
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace unwindd::service

#endif  // UNWINDD_SERVICE_SERVER_HEALTH_H_
