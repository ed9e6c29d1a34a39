// absl::Status to grpc::Status and back: the one place a Status crosses
// into gRPC. The canonical codes are the same numbers in both; the message
// is kept.
//
//   return ToGrpcStatus(status);                     // a service method
//   absl::Status s = FromGrpcStatus(stub->Call(...));  // a client
#ifndef UNWINDD_SERVICE_COMMON_GRPC_STATUS_H_
#define UNWINDD_SERVICE_COMMON_GRPC_STATUS_H_

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace unwindd::service {

grpc::Status ToGrpcStatus(const absl::Status& s);
absl::Status FromGrpcStatus(const grpc::Status& s);

}  // namespace unwindd::service

#endif  // UNWINDD_SERVICE_COMMON_GRPC_STATUS_H_
