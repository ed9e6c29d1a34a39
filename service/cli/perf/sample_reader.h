// The reading side of `unwind perf` and `unwind profile`: perf's records,
// in time order (a perf.data file or a live sampler's ring buffers), turned
// into the pipeline's samples. Every process's mapping table is kept as it
// was at each sample's time (proc/perf/process_maps.h); each sample the
// filters keep is resolved against it (proc/perf/perf_snapshot.h) and its
// stack copied, and submitted.
//
//   SampleReader reader(filters, attrs, info, snapshot_options, pipeline);
//   perf_data_reader->Read(reader);
#ifndef UNWINDD_SERVICE_CLI_PERF_SAMPLE_READER_H_
#define UNWINDD_SERVICE_CLI_PERF_SAMPLE_READER_H_

#include <sys/types.h>

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "proc/jit/jit_code.h"
#include "proc/perf/perf_data.h"
#include "proc/perf/perf_snapshot.h"
#include "proc/perf/process_maps.h"
#include "service/cli/perf/sample_pipeline.h"

namespace unwindd::service::perf {

// Samples to keep; empty lists keep all.
struct SampleFilters {
  std::vector<pid_t> pids;
  std::vector<pid_t> tids;
  std::vector<std::string> comms;
};

class SampleReader : public proc::perf::EventHandler {
 public:
  // `attrs` and `info` belong to the source and must outlive the reader
  // (a PerfDataReader's grow while it reads a pipe). `stacks_stay_valid`:
  // the events' stack bytes stay valid until the pipeline's Finish (a
  // mapped perf.data: PerfDataReader::records_outlive_delivery), so they
  // are not copied.
  SampleReader(const SampleFilters& filters, const proc::perf::AttrSet& attrs,
               const proc::perf::RecordingInfo& info,
               proc::perf::SnapshotOptions options, SamplePipeline& pipeline,
               bool stacks_stay_valid = false);

  // `cancel`, when set, makes OnEvent stop the read (Cancelled).
  void set_cancel(const std::atomic<bool>* cancel) { cancel_ = cancel; }

  absl::Status OnEvent(const proc::perf::Event& e) override;

  uint64_t samples() const { return samples_; }
  // Samples whose event recorded no user registers and stack copy (perf
  // record without --call-graph dwarf): nothing to unwind in them.
  uint64_t samples_without_user_stack() const { return samples_without_user_stack_; }
  uint64_t first_time_ns() const { return first_time_; }
  uint64_t last_time_ns() const { return last_time_; }
  const proc::perf::PerfSnapshotter& snapshots() const { return snapshots_; }
  // What could not be used of the JIT dumps, and why.
  const std::vector<std::string>& jit_warnings() const { return jit_warnings_; }
  // Reads what the JIT dumps the processes map have gained since (a live
  // process's runtime keeps writing): `unwind profile` calls it now and
  // then.
  void RefreshJitDumps();

 private:
  // A process's announced code, mapped as samples reach each load's time.
  struct JitTimeline {
    std::vector<proc::jit::JitRegion> regions;
    size_t next = 0;
  };
  // A jit-PID.dump a process mapped, and how much of it was taken.
  struct JitDumpFile {
    uint32_t pid = 0;
    std::string recorded;  // its path in the recording
    uint64_t size = 0;     // when last read
    size_t regions_taken = 0;
  };
  void LoadJitDump(uint32_t pid, const std::string& recorded);
  void ReadJitDump(JitDumpFile& d);
  void MapJitCodeUpTo(uint32_t pid, uint64_t time);
  void JitWarning(std::string w);

  const proc::perf::AttrSet& attrs_;
  proc::perf::ProcessMaps maps_;
  proc::perf::PerfSnapshotter snapshots_;
  proc::perf::PerfSnapshotter::Resolved resolved_;  // each sample's, reused
  SamplePipeline& pipeline_;
  const bool stacks_stay_valid_;
  const std::atomic<bool>* cancel_ = nullptr;
  absl::flat_hash_set<pid_t> pids_, tids_;
  absl::flat_hash_set<std::string> comms_;
  uint64_t samples_ = 0;
  uint64_t samples_without_user_stack_ = 0;
  uint64_t first_time_ = 0, last_time_ = 0;
  absl::flat_hash_map<uint32_t, JitTimeline> jit_;
  std::vector<JitDumpFile> jit_dumps_;
  std::vector<std::string> jit_warnings_;
  // Given to the snapshotter too: where a recorded path is opened here.
  std::function<std::string(const std::string&)> locate_;
};

}  // namespace unwindd::service::perf

#endif  // UNWINDD_SERVICE_CLI_PERF_SAMPLE_READER_H_
