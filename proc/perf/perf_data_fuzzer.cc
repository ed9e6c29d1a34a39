// libFuzzer target: perf.data as `unwind perf` reads it — the header,
// attributes and feature sections, every record in time order (file and
// pipe formats; PerfDataReader), the per-process mapping tables those
// records build (ProcessMaps), and each sample made into a snapshot target
// (PerfSnapshotter: registers, stack copy bounds, the mapping table). A
// recording is a file anyone can hand to the CLI, so every input must be
// read or refused with a status, within the reader's limits.
//
// Recorded paths are never opened (they name files of the fuzzing
// machine): SnapshotOptions::locate sends every one to a path that does
// not exist, so the table is built and the files reported missing.
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "proc/perf/perf_data.h"
#include "proc/perf/perf_snapshot.h"
#include "proc/perf/process_maps.h"
#include "proc/perf/records.h"

namespace unwindd::proc::perf {
namespace {

class Consumer : public EventHandler {
 public:
  Consumer(const PerfDataReader& reader, SnapshotOptions options)
      : reader_(reader), snap_(reader.info(), std::move(options)) {}

  absl::Status OnEvent(const Event& e) override {
    maps_.Apply(e);
    if (e.type != kRecordSample) return absl::OkStatus();
    KernelCallchain(e.sample);
    e.sample.valid_stack();
    if (e.attr_index < 0 || static_cast<size_t>(e.attr_index) >= reader_.attrs().size()) {
      return absl::OkStatus();
    }
    const EventAttr& attr = reader_.attrs().at(e.attr_index);
    maps_.ThreadComm(e.sample.tid);
    absl::StatusOr<PerfSnapshotter::Prepared> p =
        snap_.Prepare(e.sample, attr, maps_.Find(e.sample.pid));
    if (p.ok()) p->target->ClearSample();
    snap_.Resolve(e.sample, attr, maps_.Find(e.sample.pid)).IgnoreError();
    return absl::OkStatus();
  }

 private:
  const PerfDataReader& reader_;
  ProcessMaps maps_;
  PerfSnapshotter snap_;
};

void Run(const uint8_t* data, size_t size) {
  Limits limits;
  absl::StatusOr<std::unique_ptr<PerfDataReader>> reader =
      PerfDataReader::OpenBuffer(absl::MakeConstSpan(data, size), limits);
  if (!reader.ok()) return;
  SnapshotOptions options;
  options.locate = [](const std::string&) { return std::string("/nonexistent/fuzz"); };
  Consumer consumer(**reader, std::move(options));
  (*reader)->Read(consumer).IgnoreError();
}

}  // namespace
}  // namespace unwindd::proc::perf

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  unwindd::proc::perf::Run(data, size);
  return 0;
}
