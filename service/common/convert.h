// Conversions between the domain types (unwinder::ProcessStacks, absl::Status)
// and the public API's messages (proto/unwinder.proto), both ways: the server
// fills responses, `unwind --server` turns them back into ProcessStacks so
// it prints exactly what the in-process CLI prints.
//
//   UnwindResult r = ...;            // stacks + each module's file offset
//   ToProto(r, response);
//
// No gRPC here (grpc_status.h maps a Status): the socket client
// in `unwind` (service/remote/socket_client.h) reads responses without it.
#ifndef UNWINDD_SERVICE_COMMON_CONVERT_H_
#define UNWINDD_SERVICE_COMMON_CONVERT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "arch/arch.h"
#include "service/common/unwinder_messages.h"
#include "service/common/core_summary.h"
#include "service/common/crash_signature.h"
#include "service/common/packages.h"
#include "unwinder/method.h"
#include "unwinder/source_policy.h"
#include "unwinder/unwinder.h"

namespace unwindd::service {

// What one unwind produced: the stacks, and for each of stacks.modules the
// file offset mapped at its start (ModuleInfo has no room for it).
struct UnwindResult {
  unwinder::ProcessStacks stacks;
  std::vector<uint64_t> module_offsets;
  std::optional<CoreSummary> core;  // UnwindCore only
  std::optional<CrashSignature> signature;  // UnwindCore only
  ModulePackages packages;  // like stacks.modules; may be empty
};

v1::Method ToProto(unwinder::Method m);
v1::StopReason ToProto(unwinder::StopReason r);
v1::Arch ToProto(arch::Arch a);
absl::StatusOr<unwinder::Method> FromProto(v1::Method m);
absl::StatusOr<arch::Arch> FromProto(v1::Arch a);

// A request's `sources` as a policy: empty -> the default; METHOD_EH_FRAME,
// METHOD_DEBUG_FRAME, METHOD_SFRAME, METHOD_FRAME_POINTER in the order given;
// InvalidArgument for anything else or a repeated source.
absl::StatusOr<unwinder::SourcePolicy> SourcesFromProto(
    const google::protobuf::RepeatedField<int>& sources);
// The policy as a request's `sources`.
void SourcesToProto(const unwinder::SourcePolicy& policy,
                    google::protobuf::RepeatedField<int>* out);

void ToProto(const unwinder::ThreadStack& t, v1::ThreadStack* out);
void ToProto(const UnwindResult& r, v1::UnwindResponse* out);
// The modules of `r` (for snapshot responses, which carry one thread).
void ModulesToProto(const UnwindResult& r,
                    google::protobuf::RepeatedPtrField<v1::Module>* out);

// Back to the domain, for printing. DataLoss if a frame's module index is
// out of range or an enum value is unknown to this client.
absl::StatusOr<unwinder::ProcessStacks> FromProto(const v1::UnwindResponse& r);
// The core report as output.h prints it (`core` is the name to show for the
// core file).
CoreSummary FromProto(const v1::CoreReport& r, const std::string& core);
CrashSignature FromProto(const v1::CrashSignature& s);
// Each module's package note, like FromProto(response).modules.
ModulePackages PackagesFromProto(const v1::UnwindResponse& r);

}  // namespace unwindd::service

#endif  // UNWINDD_SERVICE_COMMON_CONVERT_H_
