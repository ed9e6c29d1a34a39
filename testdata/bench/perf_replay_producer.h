// perf_replay's sending side: a perf.data recording read with the
// project's reader (proc/perf) and turned into the SnapshotBatch messages a
// profiler backend sends (perf_replay.cc says what they carry), written to
// a BatchSink with at most `window` samples in flight; and, for --check,
// the in-process unwind of each sample.
//
//   Window window;                       // shared with the answers' reader
//   Producer p(options, *reader, sink, window, fill_expected, cache, locate, result);
//   absl::Status s = reader->Read(p);    // on the writer thread
//   s.Update(p.Finish());
//   // the reader thread: window.answered = answers so far
#ifndef UNWINDD_TESTDATA_BENCH_PERF_REPLAY_PRODUCER_H_
#define UNWINDD_TESTDATA_BENCH_PERF_REPLAY_PRODUCER_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "proc/perf/perf_data.h"
#include "proc/perf/perf_snapshot.h"
#include "proc/perf/process_maps.h"
#include "proto/unwinder.pb.h"
#include "unwinder/locate/locator.h"
#include "unwinder/module_cache.h"
#include "unwinder/unwinder.h"

namespace unwindd::replay {

struct ReplayOptions {
  int batch = 64;      // samples per message
  int window = 256;    // samples in flight at most
  int max_frames = 0;  // 0: the server's default (and the unwinder's)
  // Which pid a sample carries (perf_replay.cc, "The pid").
  enum class Pid { kExited, kRecorded, kNone } pid = Pid::kExited;
  // --floor: samples name a table never sent (kNeverSentTable).
  bool floor = false;
  std::string buildid_dir;  // perf's build-id cache, for the [vdso] image
};

inline constexpr uint64_t kNeverSentTable = ~uint64_t{0};

// What one pass measured.
struct PassResult {
  uint64_t samples = 0;
  uint64_t skipped = 0;        // not sent: no user registers or mappings
  uint64_t frames = 0;
  uint64_t stack_bytes = 0;    // of the samples' stack copies
  uint64_t request_bytes = 0;  // serialised SnapshotBatch messages
  uint64_t tables = 0;         // MappingTables sent
  uint64_t pid_ignored = 0;    // answers with pid_ignored_reason
  uint64_t batches = 0;
  int64_t switches = 0;        // the server's context switches
  double wall_s = 0, server_cpu_s = 0, client_cpu_s = 0;
  std::string error;           // the first problem, "" if none
};

// The expected frames of every sent sample, by sample id: the in-process
// unwind, filled by the first pass and checked by every pass.
using Expected = std::deque<std::vector<uint64_t>>;

// Where batches go: a gRPC stream, or a plain socket (the kernel's floor).
class BatchSink {
 public:
  virtual ~BatchSink() = default;
  // False: the other side is gone.
  virtual bool Write(const v1::SnapshotBatch& batch) = 0;
  // No more batches.
  virtual void Done() = 0;
};

// Flow control shared with the answers' reader: samples written, answered,
// whether the reader stopped, and where the expected frames go.
struct Window {
  absl::Mutex mu;
  uint64_t written ABSL_GUARDED_BY(mu) = 0;
  uint64_t answered ABSL_GUARDED_BY(mu) = 0;
  bool reader_done ABSL_GUARDED_BY(mu) = false;
  Expected* expected ABSL_GUARDED_BY(mu) = nullptr;
};

class Producer : public proc::perf::EventHandler {
 public:
  // `fill_expected`: unwind each sample in-process too, appending its
  // frames to *window.expected before the batch holding it is written.
  Producer(const ReplayOptions& options, const proc::perf::PerfDataReader& reader,
           BatchSink& sink, Window& window, bool fill_expected,
           unwinder::ModuleCache& cache, const locate::LocateOptions& locate,
           PassResult& result);

  absl::Status OnEvent(const proc::perf::Event& e) override;
  // Writes what is left and tells the sink it is done.
  absl::Status Finish();

  uint64_t sent() const { return next_id_; }
  uint64_t batches() const { return batches_; }

 private:
  struct LiveTable {
    uint64_t id = 0;        // 0: none sent for this pid, or released
    uint64_t last_use = 0;  // the sample id that last named it
  };
  struct Space {
    uint64_t id = 0;
    std::shared_ptr<proc::SnapshotTarget> target;
    std::unique_ptr<unwinder::AddressSpace> space;
  };

  int32_t SentPid(uint32_t pid);
  uint64_t UseTable(const proc::perf::PerfSnapshotter::Resolved& r, uint64_t sample);
  void Release(uint64_t id);
  void EvictOldest(uint32_t keep);
  std::vector<uint64_t> InProcess(const proc::perf::Sample& sample,
                                  const proc::perf::EventAttr& attr,
                                  const proc::perf::ProcessTable* table);
  absl::Status Flush();

  const ReplayOptions& options_;
  const proc::perf::PerfDataReader& reader_;
  BatchSink& sink_;
  Window& window_;
  const bool fill_expected_;
  proc::perf::ProcessMaps maps_;
  proc::perf::PerfSnapshotter snap_;
  unwinder::ModuleCache& cache_;
  const locate::LocateOptions& locate_;
  unwinder::UnwindOptions unwind_options_;
  PassResult& result_;
  absl::flat_hash_map<uint32_t, LiveTable> tables_;
  absl::flat_hash_map<uint32_t, Space> spaces_;
  absl::flat_hash_map<uint32_t, bool> exited_;  // --pid=exited: by recorded pid
  size_t live_ = 0;
  std::vector<uint64_t> release_;
  std::vector<uint64_t> regs_;
  std::vector<std::vector<uint64_t>> pending_expected_;
  v1::SnapshotBatch batch_;
  uint64_t next_id_ = 0;
  uint64_t batch_first_ = 0;
  uint64_t batches_ = 0;
};

// Reads a file once, so that a pass finds it in the page cache (the
// machine pages out idle files within seconds).
void WarmFile(const std::string& path);

}  // namespace unwindd::replay

#endif  // UNWINDD_TESTDATA_BENCH_PERF_REPLAY_PRODUCER_H_
