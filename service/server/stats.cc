#include "service/server/stats.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "service/common/json.h"

namespace unwindd::service {
namespace {

absl::Mutex g_log_mu;
std::FILE* g_log_file ABSL_GUARDED_BY(g_log_mu) = stderr;

std::string CodeName(absl::StatusCode code) {
  return absl::StatusCodeToString(code);  // "PERMISSION_DENIED"
}

std::string JsonCounts(const std::map<std::string, uint64_t>& m) {
  std::string out = "{";
  for (const auto& [k, v] : m) {
    absl::StrAppend(&out, out.size() > 1 ? ", " : "", JsonString(k), ": ", v);
  }
  return out + "}";
}

}  // namespace

void SetRequestLogFile(std::FILE* f) {
  absl::MutexLock l(&g_log_mu);
  g_log_file = f;
}

void ServerStats::CountError(absl::StatusCode code) {
  absl::MutexLock l(&mu_);
  ++errors_[CodeName(code)];
}

void ServerStats::CountStacks(const unwinder::ProcessStacks& stacks) {
  uint64_t n = 0;
  absl::MutexLock l(&mu_);
  for (const unwinder::ThreadStack& t : stacks.threads) {
    n += t.frames.size();
    ++stops_[std::string(unwinder::StopReasonName(t.stop))];
  }
  frames.fetch_add(n, std::memory_order_relaxed);
}

void ServerStats::CountStops(const uint64_t (&by_stop)[kStopReasons], uint64_t n) {
  absl::MutexLock l(&mu_);
  for (int r = 0; r < kStopReasons; ++r) {
    if (by_stop[r] == 0) continue;
    stops_[std::string(unwinder::StopReasonName(static_cast<unwinder::StopReason>(r)))] +=
        by_stop[r];
  }
  frames.fetch_add(n, std::memory_order_relaxed);
}

std::map<std::string, uint64_t> ServerStats::errors() const {
  absl::MutexLock l(&mu_);
  return errors_;
}

std::map<std::string, uint64_t> ServerStats::stops() const {
  absl::MutexLock l(&mu_);
  return stops_;
}

RequestLog::RequestLog(ServerStats& stats, std::string rpc, std::string caller)
    : stats_(stats), rpc_(std::move(rpc)), caller_(std::move(caller)) {}

RequestLog::~RequestLog() {
  if (!finished_) Finish(absl::UnknownError("request ended without a status"));
}

void RequestLog::AddStacks(const unwinder::ProcessStacks& stacks) {
  stats_.CountStacks(stacks);
  for (const unwinder::ThreadStack& t : stacks.threads) {
    ++threads_;
    frames_ += t.frames.size();
    ++stops_[std::string(unwinder::StopReasonName(t.stop))];
  }
}

void RequestLog::Flush() {
  uint64_t any = pending_frames_;
  for (uint64_t n : pending_stops_) any |= n;
  if (any == 0) return;
  stats_.CountStops(pending_stops_, pending_frames_);
  for (int r = 0; r < kStopReasons; ++r) {
    if (pending_stops_[r] == 0) continue;
    threads_ += pending_stops_[r];
    stops_[std::string(unwinder::StopReasonName(static_cast<unwinder::StopReason>(r)))] +=
        pending_stops_[r];
    pending_stops_[r] = 0;
  }
  frames_ += pending_frames_;
  pending_frames_ = 0;
}

void RequestLog::AddSampleError(absl::StatusCode code) {
  stats_.CountError(code);
  ++sample_errors_[CodeName(code)];
}

void RequestLog::Finish(const absl::Status& status) {
  if (finished_) return;
  finished_ = true;
  Flush();
  if (!status.ok()) stats_.CountError(status.code());
  std::string line = absl::StrFormat(
      "{\"ts\": %s, \"rpc\": %s, \"caller\": %s, \"target\": %s, "
      "\"status\": %s, \"duration_ms\": %.3f, \"queued_ms\": %.3f, "
      "\"threads\": %d, \"frames\": %d, \"stops\": %s",
      JsonString(absl::FormatTime(absl::RFC3339_full, start_, absl::UTCTimeZone())),
      JsonString(rpc_), JsonString(caller_), JsonString(target_),
      JsonString(CodeName(status.code())),
      absl::ToDoubleMilliseconds(absl::Now() - start_),
      absl::ToDoubleMilliseconds(queued_), threads_, frames_, JsonCounts(stops_));
  if (samples_ > 0) {
    absl::StrAppend(&line, ", \"samples\": ", samples_,
                    ", \"sample_errors\": ", JsonCounts(sample_errors_));
  }
  if (!status.ok()) {
    absl::StrAppend(&line, ", \"error\": ", JsonString(status.message()));
  }
  line += "}\n";
  absl::MutexLock l(&g_log_mu);
  if (g_log_file != nullptr) {
    std::fwrite(line.data(), 1, line.size(), g_log_file);
    std::fflush(g_log_file);
  }
}

}  // namespace unwindd::service
