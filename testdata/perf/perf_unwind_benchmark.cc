// How fast a perf.data recording is unwound in-process: the reader, the
// per-process mapping timelines, one reused SnapshotTarget and
// AddressSpace per process table, and unwinder::UnwindTarget per sample —
// the path `unwind perf` will take. Prints samples per second of CPU time
// (this thread), best of N passes over the file, and the stop reasons.
//
//   perf record -e cpu-clock --call-graph dwarf -o perf.data -- PROGRAM
//   bazel run -c opt //testdata/perf:perf_unwind_benchmark -- perf.data [passes]
//
// Compare with perf's own unwinding of the same file:
//   perf stat -e task-clock perf script -i perf.data -F ip > /dev/null
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>

#include "proc/perf/perf_data.h"
#include "proc/perf/perf_snapshot.h"
#include "proc/perf/process_maps.h"
#include "unwinder/unwinder.h"

namespace unwindd {
namespace {

double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

class Unwinder : public proc::perf::EventHandler {
 public:
  Unwinder(const proc::perf::PerfDataReader& r, unwinder::ModuleCache& cache)
      : reader_(r), snap_(r.info(), Options()), cache_(cache) {}

  static proc::perf::SnapshotOptions Options() {
    proc::perf::SnapshotOptions o;
    const char* home = getenv("HOME");
    if (home != nullptr) o.buildid_dir = std::string(home) + "/.debug";
    o.use_own_vdso = true;
    return o;
  }

  absl::Status OnEvent(const proc::perf::Event& e) override {
    maps_.Apply(e);
    if (e.type != proc::perf::kRecordSample) return absl::OkStatus();
    absl::StatusOr<proc::perf::PerfSnapshotter::Prepared> p = snap_.Prepare(
        e.sample, reader_.attrs().at(e.attr_index), maps_.Find(e.sample.pid));
    if (!p.ok()) {
      ++unprepared;
      return absl::OkStatus();
    }
    Space& s = spaces_[e.sample.pid];
    if (s.id != p->target_id) {
      s.space.reset();
      s.target = p->target;
      s.id = p->target_id;
      s.space = std::make_unique<unwinder::AddressSpace>(*s.target, cache_);
    }
    unwinder::ProcessStacks st = unwinder::UnwindTarget(*s.target, *s.space, options_);
    p->target->ClearSample();
    ++samples;
    if (!st.threads.empty()) {
      frames += st.threads[0].frames.size();
      ++stops[std::string(unwinder::StopReasonName(st.threads[0].stop))];
    }
    return absl::OkStatus();
  }

  uint64_t samples = 0, frames = 0, unprepared = 0;
  std::map<std::string, uint64_t> stops;

 private:
  struct Space {
    uint64_t id = 0;
    std::shared_ptr<proc::SnapshotTarget> target;
    std::unique_ptr<unwinder::AddressSpace> space;
  };
  const proc::perf::PerfDataReader& reader_;
  proc::perf::ProcessMaps maps_;
  proc::perf::PerfSnapshotter snap_;
  unwinder::ModuleCache& cache_;
  unwinder::UnwindOptions options_;
  std::map<uint32_t, Space> spaces_;
};

int Main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: perf_unwind_benchmark PERF_DATA [passes]\n");
    return 2;
  }
  const int passes = argc > 2 ? std::atoi(argv[2]) : 5;
  unwinder::ModuleCache cache;  // shared across passes, as a server's would be
  double best = 1e99;
  for (int i = 0; i < passes; ++i) {
    const double t0 = ThreadCpuSeconds();
    absl::StatusOr<std::unique_ptr<proc::perf::PerfDataReader>> r =
        proc::perf::PerfDataReader::OpenFile(argv[1]);
    if (!r.ok()) {
      std::fprintf(stderr, "%s\n", r.status().ToString().c_str());
      return 1;
    }
    Unwinder u(**r, cache);
    absl::Status s = (*r)->Read(u);
    const double cpu = ThreadCpuSeconds() - t0;
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", s.ToString().c_str());
      return 1;
    }
    best = std::min(best, cpu);
    if (i == passes - 1) {
      std::printf("%lu samples (%lu not unwindable), %.1f frames/sample; stops:",
                  u.samples, u.unprepared, u.samples ? double(u.frames) / u.samples : 0.0);
      for (const auto& [reason, n] : u.stops) std::printf(" %s=%lu", reason.c_str(), n);
      std::printf("\nbest of %d passes: %.1f ms CPU, %.0f samples per CPU-second\n", passes,
                  best * 1e3, u.samples / best);
    }
  }
  return 0;
}

}  // namespace
}  // namespace unwindd

int main(int argc, char** argv) { return unwindd::Main(argc, argv); }
