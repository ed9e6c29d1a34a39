#include "service/server/snapshot_messages.h"

#include "absl/strings/str_format.h"

namespace unwindd::service {

absl::Status BeginBatch(SnapshotSession& session, const v1::SnapshotBatch& batch) {
  if (batch.samples_size() > kMaxSamplesPerBatch) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "a batch of %d samples; at most %d", batch.samples_size(), kMaxSamplesPerBatch));
  }
  for (const v1::MappingTable& t : batch.mapping_tables()) {
    if (t.id() == 0) {
      return absl::InvalidArgumentError(
          "a SnapshotBatch carries a MappingTable without an id");
    }
    session.DefineTable(t).IgnoreError();
  }
  return absl::OkStatus();
}

void EndBatch(SnapshotSession& session, const v1::SnapshotBatch& batch) {
  for (uint64_t id : batch.release_mapping_table_ids()) session.ReleaseTable(id);
}

absl::Status AnswerSample(SnapshotSession& session, const v1::SnapshotRequest& request,
                          const StackCopy& stack,
                          const std::atomic<bool>* cancel, const absl::Status& error,
                          bool batch, SampleAnswer* answer, AnswerSink& out,
                          unwinder::StopReason* stop) {
  // The answer's strings are the session's until the next sample: encoded
  // at once.
  answer->Clear();
  answer->sample_id = request.sample_id();
  absl::Status s =
      error.ok() ? session.Unwind(request, stack, cancel, answer, stop) : error;
  if (!s.ok()) answer->error = s;
  if (batch) {
    AppendBatchElement(*answer, out);
  } else {
    AppendSnapshotResponse(*answer, out);
  }
  return s;
}

absl::Status AnswerSample(SnapshotSession& session, const v1::SnapshotRequest& request,
                          const std::atomic<bool>* cancel, const absl::Status& error,
                          bool batch, SampleAnswer* answer, AnswerSink& out,
                          unwinder::StopReason* stop) {
  return AnswerSample(session, request,
                      absl::MakeConstSpan(
                          reinterpret_cast<const uint8_t*>(request.stack().data()),
                          request.stack().size()),
                      cancel, error, batch, answer, out, stop);
}

absl::Status AnswerSample(SnapshotSession& session, const v1::SnapshotRequest& request,
                          const std::atomic<bool>* cancel, const absl::Status& error,
                          bool batch, SampleAnswer* answer, std::string* out,
                          unwinder::StopReason* stop) {
  StringSink sink(out);
  return AnswerSample(session, request, cancel, error, batch, answer, sink, stop);
}

}  // namespace unwindd::service
