// Client helpers for snapshot-stream tests: send samples (or batches) on one
// stream of a real unwindd and collect the answers in order, and turn a
// captured sample's own mappings into a MappingTable named by id.
//
//   std::vector<v1::SnapshotRequest> s = *CaptureSamples(pid, {});
//   v1::MappingTable table = TakeTable(s, 7);   // s now name table 7
//   s[0].mutable_mapping_table()->Swap(&table);  // sent with the first
//   std::vector<v1::SnapshotResponse> got = Stream(*stub, s, &status);
#ifndef UNWINDD_SERVICE_SERVER_TESTING_SNAPSHOT_STREAMS_H_
#define UNWINDD_SERVICE_SERVER_TESTING_SNAPSHOT_STREAMS_H_

#include <cstdint>
#include <tuple>
#include <vector>

#include "grpcpp/grpcpp.h"
#include "proto/unwinder.grpc.pb.h"

namespace unwindd::service::testing {

// pc, sp, method, rel_pc, file_offset and whether a module was found, per
// frame.
using FrameKey = std::tuple<uint64_t, uint64_t, int, uint64_t, uint64_t, bool>;
std::vector<FrameKey> Keys(const v1::ThreadStack& t);

// The first sample's mappings as table `id`; every sample's own mappings
// are cleared and it names the table instead.
v1::MappingTable TakeTable(std::vector<v1::SnapshotRequest>& samples, uint64_t id);

// Sends `samples` on one UnwindSnapshots stream, one answer awaited per
// sample; the responses in order, and the stream's status.
std::vector<v1::SnapshotResponse> Stream(v1::Unwinder::Stub& stub,
                                         const std::vector<v1::SnapshotRequest>& samples,
                                         grpc::Status* status);

// The same for UnwindSnapshotBatches, one message per batch; the responses
// flattened.
std::vector<v1::SnapshotResponse> StreamBatches(v1::Unwinder::Stub& stub,
                                                const std::vector<v1::SnapshotBatch>& batches,
                                                grpc::Status* status);

}  // namespace unwindd::service::testing

#endif  // UNWINDD_SERVICE_SERVER_TESTING_SNAPSHOT_STREAMS_H_
