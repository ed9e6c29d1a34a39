// What `unwind perf` and `unwind profile` write: unwound samples
// (sample_pipeline.h) in one of four formats, to a FILE.
//
//   perf-script  `perf script`'s text, line for line (cli/perf_script)
//   json         {"samples": [{"pid", "tid", "time", ..., "frames": [...]}]}
//                with the frames of `unwind pid --format=json`
//   pprof        a gzipped perftools.profiles.Profile (cli/profile/pprof.h)
//   folded       flamegraph.pl's folded stacks (cli/profile/folded.h)
//
// The text formats stream (one sample at a time); the profile formats
// aggregate identical stacks and write at Finish.
//
//   std::unique_ptr<SampleSink> sink = MakeSink(SinkFormat::kPprof, out);
//   sink->Add(sample);  ...  sink->Finish({.duration_nanos = ...});
#ifndef UNWINDD_SERVICE_CLI_PERF_SINKS_H_
#define UNWINDD_SERVICE_CLI_PERF_SINKS_H_

#include <cstdint>
#include <cstdio>
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "proc/jit/perf_map.h"
#include "service/cli/args.h"
#include "service/cli/profile/profile.h"
#include "service/cli/perf/sample_pipeline.h"

namespace unwindd::service::perf {

enum class SinkFormat { kPerfScript, kJson, kPprof, kFolded };

// The sink of a command line's --format (text is not one: perf-script).
SinkFormat SinkFormatOf(Format format);

class SampleSink {
 public:
  virtual ~SampleSink() = default;
  // The first error (a write that failed, a profile limit) sticks: later
  // samples are dropped and Finish returns it.
  virtual void Add(const UnwoundSample& sample) = 0;
  // A sink whose formatting can run on the pipeline's workers returns
  // their formatters (PipelineOptions::worker_formatter); the pipeline
  // then hands it each batch's text through AddText instead of samples
  // through Add. Null: Add formats.
  virtual SampleFormatterFactory WorkerFormatter() { return nullptr; }
  virtual void AddText(absl::string_view text) {}
  // `info` goes into the profile formats' header.
  virtual absl::Status Finish(const struct ProfileInfo& info) = 0;
};

// What the profile formats record besides the stacks.
struct ProfileInfo {
  int64_t time_nanos = 0;      // start, ns since the epoch (0: unknown)
  int64_t duration_nanos = 0;
  int64_t period = 0;          // weight units between samples (0: unknown)
};

// `out` must stay open until Finish; `perf_maps`, when given, until then
// too: it names code in anonymous executable memory (perf's
// /tmp/perf-PID.map) in the perf-script, pprof and folded output.
std::unique_ptr<SampleSink> MakeSink(SinkFormat format, std::FILE* out,
                                     proc::jit::PerfMaps* perf_maps = nullptr);

// Names the profile's locations in "/tmp/perf-PID.map" modules (what
// ProfileBuilder calls a process's anonymous executable memory) by the
// process's map, if it has one.
void NamePerfMapCode(proc::jit::PerfMaps& perf_maps, profile::Profile& profile);

}  // namespace unwindd::service::perf

#endif  // UNWINDD_SERVICE_CLI_PERF_SINKS_H_
