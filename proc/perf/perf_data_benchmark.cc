// Reads a perf.data file (or a pipe-mode stream on stdin with "-") and
// prints what it holds and how fast it was read: records per second of
// wall time, decoding every record and every sample field.
//
//   bazel run -c opt //proc/perf:perf_data_benchmark -- /path/perf.data [repeat] [map|read|sparse]
//
// "read" reads the file with pread (FileAccess::kRead), "sparse" without the
// samples' stack copies (FileAccess::kSparse), "map" (the default) mapped.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "proc/perf/perf_data.h"

namespace unwindd::proc::perf {
namespace {

class Counter : public EventHandler {
 public:
  absl::Status OnEvent(const Event& e) override {
    ++by_type[e.type < 128 ? e.type : 127];
    if (e.type == kRecordSample) {
      stack_bytes += e.sample.valid_stack().size();
      frames += e.sample.callchain.size();
    }
    return absl::OkStatus();
  }
  uint64_t by_type[128] = {};
  uint64_t stack_bytes = 0;
  uint64_t frames = 0;
};

int Main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: perf_data_benchmark PERF_DATA|- [repeat] [map|read|sparse]\n");
    return 2;
  }
  const std::string path = argv[1];
  const int repeat = argc > 2 ? std::atoi(argv[2]) : 1;
  const std::string how = argc > 3 ? argv[3] : "map";
  const FileAccess access = how == "read"     ? FileAccess::kRead
                            : how == "sparse" ? FileAccess::kSparse
                                              : FileAccess::kMap;
  double best = 1e99;
  Counter last;
  ReadStats stats;
  for (int i = 0; i < repeat; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    absl::StatusOr<std::unique_ptr<PerfDataReader>> r =
        path == "-" ? PerfDataReader::OpenStream(memory::ScopedFd(dup(0)))
                    : PerfDataReader::OpenFile(path, {}, access);
    if (!r.ok()) {
      std::fprintf(stderr, "%s\n", r.status().ToString().c_str());
      return 1;
    }
    Counter c;
    absl::Status s = (*r)->Read(c);
    auto t1 = std::chrono::steady_clock::now();
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", s.ToString().c_str());
      return 1;
    }
    best = std::min(best, std::chrono::duration<double>(t1 - t0).count());
    last = c;
    stats = (*r)->stats();
    if (i == 0) {
      for (const EventAttr& a : (*r)->attrs().attrs()) {
        std::printf("attr type %u config %lu sample_type 0x%lx ids %zu name '%s'\n",
                    a.type, a.config, a.sample_type, a.ids.size(), a.name.c_str());
      }
      std::printf("arch '%s' build-ids %zu\n", (*r)->info().arch.c_str(),
                  (*r)->info().build_ids.size());
      for (const std::string& w : (*r)->warnings().kept()) {
        std::fprintf(stderr, "warning: %s\n", w.c_str());
      }
    }
  }
  std::printf("records %lu samples %lu mmap %lu mmap2 %lu comm %lu fork %lu "
              "exit %lu rounds %lu skipped %lu out_of_order %lu max_queued %lu\n",
              stats.records, stats.samples, last.by_type[kRecordMmap],
              last.by_type[kRecordMmap2], last.by_type[kRecordComm],
              last.by_type[kRecordFork], last.by_type[kRecordExit], stats.rounds,
              stats.skipped, stats.out_of_order, stats.max_queued);
  std::printf("best of %d: %.3f ms, %.0f records/s, %.0f samples/s\n", repeat,
              best * 1e3, stats.records / best, stats.samples / best);
  return 0;
}

}  // namespace
}  // namespace unwindd::proc::perf

int main(int argc, char** argv) { return unwindd::proc::perf::Main(argc, argv); }
