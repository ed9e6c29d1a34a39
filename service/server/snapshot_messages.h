// One message of a snapshot stream, as unwindd handles it, without gRPC:
// the checks a SnapshotBatch gets before its samples, each sample unwound
// and encoded (response_encoder.h), and the releases after them. The gRPC
// handlers (service.cc) read messages and write replies around these; the
// snapshot-request fuzz target calls them directly, so both run the same
// path.
//
//   SnapshotSession session(...);                       // per stream
//   std::string out;
//   absl::Status s = BeginBatch(session, batch);        // not OK: the stream ends
//   for (const v1::SnapshotRequest& r : batch.samples()) {
//     AnswerSample(session, r, &cancel, absl::OkStatus(), /*batch=*/true,
//                  &answer, &out);                      // appends its element
//   }
//   EndBatch(session, batch);
//
// An UnwindSnapshots stream is the same with one sample per message,
// `batch` false and no BeginBatch/EndBatch.
#ifndef UNWINDD_SERVICE_SERVER_SNAPSHOT_MESSAGES_H_
#define UNWINDD_SERVICE_SERVER_SNAPSHOT_MESSAGES_H_

#include <atomic>
#include <string>

#include "absl/status/status.h"
#include "proto/unwinder.pb.h"
#include "service/server/response_encoder.h"
#include "service/server/snapshots.h"
#include "unwinder/unwinder.h"

namespace unwindd::service {

// UnwindSnapshotBatches: the most samples one message may carry.
inline constexpr int kMaxSamplesPerBatch = 1024;

// Before a batch's samples: InvalidArgument, which ends the stream, for
// more than kMaxSamplesPerBatch samples or a MappingTable without an id
// (no sample could name it, so no sample could be told). Then defines its
// tables; a table refused for another reason answers the samples naming it.
absl::Status BeginBatch(SnapshotSession& session, const v1::SnapshotBatch& batch);

// After a batch's samples: forgets the tables it releases.
void EndBatch(SnapshotSession& session, const v1::SnapshotBatch& batch);

// Unwinds `request` (or, if `error` is not OK, answers it with `error`
// without unwinding) into `*answer` and appends the encoded answer to
// `out`: an element of SnapshotBatchResponse.responses when `batch`,
// else a whole SnapshotResponse. Returns the sample's status (its error
// is in the answer; the stream goes on). `*stop` (if given) gets why the
// walk stopped.
absl::Status AnswerSample(SnapshotSession& session, const v1::SnapshotRequest& request,
                          const std::atomic<bool>* cancel, const absl::Status& error,
                          bool batch, SampleAnswer* answer, AnswerSink& out,
                          unwinder::StopReason* stop = nullptr);
// The same with the stack copy given apart (SnapshotSession::Unwind's).
absl::Status AnswerSample(SnapshotSession& session, const v1::SnapshotRequest& request,
                          const StackCopy& stack,
                          const std::atomic<bool>* cancel, const absl::Status& error,
                          bool batch, SampleAnswer* answer, AnswerSink& out,
                          unwinder::StopReason* stop = nullptr);
absl::Status AnswerSample(SnapshotSession& session, const v1::SnapshotRequest& request,
                          const std::atomic<bool>* cancel, const absl::Status& error,
                          bool batch, SampleAnswer* answer, std::string* out,
                          unwinder::StopReason* stop = nullptr);

}  // namespace unwindd::service

#endif  // UNWINDD_SERVICE_SERVER_SNAPSHOT_MESSAGES_H_
