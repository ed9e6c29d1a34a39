// unwindd's counters (served by the GetStats RPC) and its structured request
// log: one JSON object per line, per request (per stream for
// UnwindSnapshots, whose samples would otherwise flood the log).
//
//   RequestLog log(stats, "UnwindProcess", caller.Describe());
//   log.set_target("pid 1234");
//   log.AddStacks(result.stacks);
//   log.Finish(status);   // counts, then writes the line
#ifndef UNWINDD_SERVICE_SERVER_STATS_H_
#define UNWINDD_SERVICE_SERVER_STATS_H_

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "unwinder/unwinder.h"

namespace unwindd::service {

// StopReason values (unwinder/method.h), kCancelled being the last.
inline constexpr int kStopReasons = static_cast<int>(unwinder::StopReason::kCancelled) + 1;

class ServerStats {
 public:
  std::atomic<uint64_t> process_requests{0};
  std::atomic<uint64_t> core_requests{0};
  std::atomic<uint64_t> snapshot_streams{0};
  std::atomic<uint64_t> samples{0};
  std::atomic<uint64_t> frames{0};
  std::atomic<uint64_t> memory_bytes_read{0};
  std::atomic<uint64_t> rejected_requests{0};
  std::atomic<uint64_t> connections{0};
  const absl::Time started = absl::Now();

  void CountError(absl::StatusCode code);
  void CountStacks(const unwinder::ProcessStacks& stacks);
  // `by_stop[r]` stacks stopped for StopReason r, with `frames` frames in
  // all.
  void CountStops(const uint64_t (&by_stop)[kStopReasons], uint64_t frames);
  std::map<std::string, uint64_t> errors() const;
  std::map<std::string, uint64_t> stops() const;

 private:
  mutable absl::Mutex mu_;
  std::map<std::string, uint64_t> errors_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, uint64_t> stops_ ABSL_GUARDED_BY(mu_);
};

// Where request log lines go; null: nowhere. Lines are written whole with
// one fwrite under a lock, so concurrent requests never interleave.
void SetRequestLogFile(std::FILE* f);

class RequestLog {
 public:
  RequestLog(ServerStats& stats, std::string rpc, std::string caller);
  ~RequestLog();  // Finish(Unknown) if Finish was not called
  RequestLog(const RequestLog&) = delete;
  RequestLog& operator=(const RequestLog&) = delete;

  void set_target(std::string t) { target_ = std::move(t); }
  void set_caller(std::string c) { caller_ = std::move(c); }
  void set_queued(absl::Duration d) { queued_ += d; }
  void AddStacks(const unwinder::ProcessStacks& stacks);
  void AddSample() { ++samples_; }
  // One snapshot sample's stack: counted here without a lock, and handed
  // to the server's counters by Flush (a stream calls it once per message)
  // or Finish.
  void AddStack(unwinder::StopReason stop, uint64_t frames) {
    ++pending_stops_[static_cast<int>(stop)];
    pending_frames_ += frames;
  }
  void Flush();
  void AddSampleError(absl::StatusCode code);
  // Counts the request's outcome and writes its line; idempotent.
  void Finish(const absl::Status& status);

 private:
  ServerStats& stats_;
  const std::string rpc_;
  std::string caller_;
  std::string target_;
  const absl::Time start_ = absl::Now();
  absl::Duration queued_;
  uint64_t threads_ = 0;
  uint64_t frames_ = 0;
  uint64_t samples_ = 0;
  std::map<std::string, uint64_t> stops_;
  std::map<std::string, uint64_t> sample_errors_;
  uint64_t pending_stops_[kStopReasons] = {};
  uint64_t pending_frames_ = 0;
  bool finished_ = false;
};

}  // namespace unwindd::service

#endif  // UNWINDD_SERVICE_SERVER_STATS_H_
