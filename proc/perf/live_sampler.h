// Sampling a live process the way `perf record -e cpu-clock -F HZ
// --call-graph dwarf,STACK -p PID` does: one cpu-clock event per thread and
// CPU (perf_event_open, inherited by the threads it creates: the kernel
// maps no inherited event that is not bound to a CPU), all of a CPU's
// writing into one ring buffer (PERF_EVENT_IOC_SET_OUTPUT), sampling the
// user registers and a copy of the user stack, and recording the process's
// mmaps, comms, forks and exits. The
// records come out decoded (proc/perf/perf_data.h's Event), in time order,
// after the mapping table and thread names perf record would synthesize
// from /proc at the start.
//
//   absl::StatusOr<std::unique_ptr<LiveSampler>> s = LiveSampler::Start(pid, {});
//   while (!done) (*s)->Poll(handler, absl::Milliseconds(100));
//   (*s)->Stop();  (*s)->Poll(handler, absl::ZeroDuration());  // the rest
//
// The sampled process is not stopped or traced: it runs on, and keeps
// running after the sampler is destroyed (its events are closed).
// Bounded: at most kMaxSampledThreads threads, kMaxSampledEvents events, a
// ring buffer of LiveSamplerOptions::ring_pages per CPU, and what one Poll
// delivers.
#ifndef UNWINDD_PROC_PERF_LIVE_SAMPLER_H_
#define UNWINDD_PROC_PERF_LIVE_SAMPLER_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "memory/scoped_fd.h"
#include "proc/perf/header.h"
#include "proc/perf/perf_data.h"
#include "proc/perf/records.h"

namespace unwindd::proc::perf {

inline constexpr size_t kMaxSampledThreads = 4096;
inline constexpr size_t kMaxSampledEvents = 65536;

struct LiveSamplerOptions {
  int frequency_hz = 99;
  // PERF_SAMPLE_STACK_USER bytes per sample (perf's default is 8192; a
  // multiple of 8 below 64 KiB).
  uint32_t stack_bytes = 16384;
  // Data pages per CPU's ring buffer (a power of two).
  uint32_t ring_pages = 64;
};

class LiveSampler {
 public:
  // PermissionDenied (perf_event_paranoid, no CAP_PERFMON), NotFound (no
  // such process), Unimplemented (perf_event_open unavailable).
  static absl::StatusOr<std::unique_ptr<LiveSampler>> Start(pid_t pid,
                                                            const LiveSamplerOptions& options);
  ~LiveSampler();
  LiveSampler(const LiveSampler&) = delete;
  LiveSampler& operator=(const LiveSampler&) = delete;

  // Waits up to `timeout` for records, then delivers every record the
  // buffers hold, oldest first (the first call: the synthesized mappings
  // and names before them). A handler's error ends Poll with it.
  absl::Status Poll(EventHandler& handler, absl::Duration timeout);
  // Disables every event; what they wrote stays for Poll.
  void Stop();

  // Whether the process still exists.
  bool ProcessAlive() const;

  const AttrSet& attrs() const { return attrs_; }
  const RecordingInfo& info() const { return info_; }
  uint64_t samples() const { return samples_; }
  uint64_t lost() const { return lost_; }
  size_t threads() const { return opened_tids_.size(); }

 private:
  struct Ring;
  LiveSampler(pid_t pid, const LiveSamplerOptions& options);
  absl::Status OpenThread(pid_t tid);
  absl::Status Synthesize(EventHandler& handler);
  void Drain(Ring& ring, std::vector<std::vector<uint8_t>>& out);

  pid_t pid_;
  LiveSamplerOptions options_;
  std::vector<uint8_t> attr_bytes_;  // the perf_event_attr every event uses
  AttrSet attrs_;
  RecordingInfo info_;
  std::vector<int> cpus_;
  std::vector<std::unique_ptr<Ring>> rings_;  // one per entry of cpus_
  std::vector<memory::ScopedFd> events_;      // every other event
  std::vector<pid_t> opened_tids_;
  bool synthesized_ = false;
  uint64_t samples_ = 0;
  uint64_t lost_ = 0;
};

}  // namespace unwindd::proc::perf

#endif  // UNWINDD_PROC_PERF_LIVE_SAMPLER_H_
