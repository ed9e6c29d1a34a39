// The unwindd.v1.Unwinder service: identifies the caller, validates the
// request against the server's limits, runs the unwind on the worker pool
// under the request's deadline, and converts the result. Logs one line per
// request (per stream for UnwindSnapshots) and keeps the counters GetStats
// serves.
//
//   UnwinderService service(options, &peers);
//   builder.RegisterService(&service);
//   ... on SIGTERM: service.BeginShutdown(); server->Shutdown(deadline);
//   service.FinishShutdown();      // joins the workers: every target detached
#ifndef UNWINDD_SERVICE_SERVER_SERVICE_H_
#define UNWINDD_SERVICE_SERVER_SERVICE_H_

#include <atomic>
#include <cstdint>
#include <memory>

#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "proto/unwinder.grpc.pb.h"
#include "service/server/auth.h"
#include "service/server/binaries.h"
#include "service/server/pool.h"
#include "service/server/snapshots.h"
#include "service/server/stats.h"
#include "service/server/tls.h"
#include "service/server/unwind.h"
#include "unwinder/module_cache.h"

namespace unwindd::service {

struct ServiceOptions {
  int workers = 4;
  int max_queued = 256;
  // Applied when the client sets no deadline, and the most any request
  // (any one sample of a stream) may take.
  absl::Duration max_request_time = absl::Seconds(30);
  int default_frames = unwinder::kDefaultMaxFrames;
  int max_frames = 4096;
  // How long UnwindProcess waits for a thread to stop before walking it
  // from /proc/PID/task/TID/syscall (proc::AttachOptions); infinite: as
  // long as it takes.
  absl::Duration stop_timeout = absl::Seconds(1);
  int max_tids = 1 << 16;
  uint64_t max_core_bytes = uint64_t{1} << 30;
  // All streamed cores being received at once.
  uint64_t max_core_bytes_in_flight = uint64_t{2} << 30;
  // A compressed core's decompressed size (a temporary sparse file).
  uint64_t max_decompressed_core_bytes = uint64_t{16} << 30;
  uint64_t max_samples_per_stream = uint64_t{1} << 32;
  uint64_t module_cache_bytes = uint64_t{4} << 30;
  bool allow_tcp_unwind_any = false;
  // TCP listeners use TLS with client certificates (tls.h): a TCP caller's
  // permissions are those of the --tls-allow rules naming its certificate.
  bool tls = false;
  std::vector<TlsRule> tls_allow;
  SnapshotLimits snapshot;
  // A snapshot stream this old ends after its current message with
  // UNAVAILABLE, so that long-lived streams move between replicas too
  // (the server's --max-connection-age; zero: never).
  absl::Duration max_stream_age = absl::ZeroDuration();
  // --debug-dir (default /usr/lib/debug) and --debuginfod=URL (off when
  // empty; the environment's DEBUGINFOD_URLS is ignored).
  std::vector<std::string> debug_dirs = {"/usr/lib/debug"};
  locate::DebuginfodOptions debuginfod;
};

class UnwinderService final : public v1::Unwinder::Service {
 public:
  UnwinderService(const ServiceOptions& options, const PeerRegistry* peers);
  ~UnwinderService() override;

  grpc::Status UnwindProcess(grpc::ServerContext* context,
                             const v1::UnwindProcessRequest* request,
                             v1::UnwindResponse* response) override;
  grpc::Status UnwindCore(grpc::ServerContext* context,
                          grpc::ServerReader<v1::UnwindCoreRequest>* reader,
                          v1::UnwindResponse* response) override;
  // UnwindSnapshots and UnwindSnapshotBatches (see the constructor): the
  // responses are encoded by response_encoder.h.
  grpc::Status StreamSnapshots(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<grpc::ByteBuffer, v1::SnapshotRequest>* stream);
  grpc::Status StreamSnapshotBatches(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<grpc::ByteBuffer, grpc::ByteBuffer>* stream);
  grpc::Status GetStats(grpc::ServerContext* context,
                        const v1::GetStatsRequest* request,
                        v1::Stats* response) override;

  // New requests get UNAVAILABLE; running ones finish (streams end after
  // their current message, with UNAVAILABLE: the client reopens elsewhere).
  void BeginShutdown();
  // Waits until no request (and no sample of a stream) is being worked on,
  // or `deadline`. Streams waiting for their client's next sample do not
  // count: they hold no target and lose nothing when cancelled.
  bool WaitIdle(absl::Time deadline);
  // After BeginShutdown: ends every stream waiting for its client's next
  // message with UNAVAILABLE (the client reopens it elsewhere; every
  // message it sent before was answered). Returns how many.
  int EndIdleStreams();
  // Cancels what is still running and joins the workers.
  void FinishShutdown();

  ServerStats& stats() { return stats_; }

 private:
  class SnapshotStream;
  // The methods' indexes in the generated service (their order in
  // proto/unwinder.proto).
  static constexpr int kUnwindSnapshotsMethod = 2;
  static constexpr int kUnwindSnapshotBatchesMethod = 3;

  // Runs `fn` on the pool (keyed: same key never concurrently) and waits
  // for it within the request's deadline, giving up early if the client
  // cancels. The job is always finished or withdrawn when this returns.
  // `here`: `fn` needs no worker thread of its own, so when a worker is
  // free (and no queued job could run instead, and none with `key` runs)
  // it runs on this thread instead, under the watchdog, saving the two
  // thread switches of a hand-off. A snapshot sample needs no thread of its
  // own; nor does a live unwind, whose ptrace requests must all come from
  // the one thread that attached (live_target.h), which this thread is
  // from attach to detach.
  absl::Status RunJob(grpc::ServerContext* context, int64_t key, absl::Time deadline,
                      RequestLog& log, WorkPool::Fn fn, bool here = false);
  // Runs `unwind` as a job keyed by `key` (see RunJob, `here` included; it
  // sets options.cancel) and answers with its stacks.
  absl::Status RunUnwind(grpc::ServerContext* context, int64_t key, RequestLog& log,
                         unwinder::UnwindOptions& options, v1::UnwindResponse* response,
                         absl::FunctionRef<absl::StatusOr<UnwindResult>()> unwind,
                         bool here = false);
  // Every RPC's first step: UNAVAILABLE while shutting down, else the
  // caller (logged).
  absl::StatusOr<Caller> Admit(grpc::ServerContext* context, RequestLog& log) const;
  absl::Time Deadline(grpc::ServerContext* context) const;
  absl::StatusOr<Caller> Identify(grpc::ServerContext* context) const;
  absl::StatusOr<int> Frames(uint32_t requested) const;

  const ServiceOptions options_;
  const PeerRegistry* const peers_;
  ServerStats stats_;
  unwinder::ModuleCache cache_;
  BuildIdIndex build_ids_;
  ServerBinaries binaries_;
  VdsoImage vdso_;
  WorkPool pool_;
  Watchdog watchdog_;
  // Marks a handler busy for its lifetime (see WaitIdle); with `stream`,
  // that snapshot stream is working on a message (not idle: EndIdleStreams).
  class Busy {
   public:
    explicit Busy(UnwinderService* s, grpc::ServerContext* stream = nullptr)
        : s_(s), stream_(stream) {
      absl::MutexLock l(&s_->busy_mu_);
      ++s_->busy_;
      if (stream_ != nullptr) s_->idle_streams_.erase(stream_);
    }
    ~Busy() {
      absl::MutexLock l(&s_->busy_mu_);
      --s_->busy_;
      if (stream_ != nullptr) s_->idle_streams_.insert(stream_);
    }

   private:
    UnwinderService* s_;
    grpc::ServerContext* stream_;
  };

  std::atomic<bool> shutting_down_{false};
  absl::Mutex busy_mu_;
  int busy_ ABSL_GUARDED_BY(busy_mu_) = 0;
  // Open snapshot streams waiting for their client's next message.
  absl::flat_hash_set<grpc::ServerContext*> idle_streams_ ABSL_GUARDED_BY(busy_mu_);
  std::atomic<uint64_t> core_bytes_in_flight_{0};
};

}  // namespace unwindd::service

#endif  // UNWINDD_SERVICE_SERVER_SERVICE_H_
