#include "service/server/testing/snapshot_streams.h"

namespace unwindd::service::testing {

std::vector<FrameKey> Keys(const v1::ThreadStack& t) {
  std::vector<FrameKey> out;
  for (const v1::Frame& f : t.frames()) {
    out.emplace_back(f.pc(), f.sp(), f.method(), f.rel_pc(), f.file_offset(),
                     f.has_module());
  }
  return out;
}

v1::MappingTable TakeTable(std::vector<v1::SnapshotRequest>& samples, uint64_t id) {
  v1::MappingTable table;
  table.set_id(id);
  if (!samples.empty()) *table.mutable_mappings() = samples[0].mappings();
  for (v1::SnapshotRequest& r : samples) {
    r.clear_mappings();
    r.set_mapping_table_id(id);
  }
  return table;
}

std::vector<v1::SnapshotResponse> Stream(v1::Unwinder::Stub& stub,
                                         const std::vector<v1::SnapshotRequest>& samples,
                                         grpc::Status* status) {
  grpc::ClientContext c;
  auto stream = stub.UnwindSnapshots(&c);
  std::vector<v1::SnapshotResponse> out;
  for (const v1::SnapshotRequest& r : samples) {
    if (!stream->Write(r)) break;
    v1::SnapshotResponse resp;
    if (!stream->Read(&resp)) break;
    out.push_back(std::move(resp));
  }
  stream->WritesDone();
  *status = stream->Finish();
  return out;
}

std::vector<v1::SnapshotResponse> StreamBatches(v1::Unwinder::Stub& stub,
                                                const std::vector<v1::SnapshotBatch>& batches,
                                                grpc::Status* status) {
  grpc::ClientContext c;
  auto stream = stub.UnwindSnapshotBatches(&c);
  std::vector<v1::SnapshotResponse> out;
  for (const v1::SnapshotBatch& b : batches) {
    if (!stream->Write(b)) break;
    v1::SnapshotBatchResponse resp;
    if (!stream->Read(&resp)) break;
    for (v1::SnapshotResponse& r : *resp.mutable_responses()) out.push_back(std::move(r));
  }
  stream->WritesDone();
  *status = stream->Finish();
  return out;
}

}  // namespace unwindd::service::testing
