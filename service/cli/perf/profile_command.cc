#include "service/cli/perf/profile_command.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <thread>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "proc/jit/perf_map.h"
#include "proc/perf/live_sampler.h"
#include "service/cli/perf/output_file.h"
#include "service/cli/perf/sample_pipeline.h"
#include "service/cli/perf/sample_reader.h"
#include "service/cli/perf/sinks.h"

namespace unwindd::service::perf {
namespace {

int Fail(absl::string_view msg) {
  std::fprintf(stderr, "unwind: %.*s\n", static_cast<int>(msg.size()), msg.data());
  return 1;
}

constexpr absl::Duration kPollInterval = absl::Milliseconds(100);

}  // namespace

int RunProfile(const Command& cmd, const std::atomic<bool>* interrupted) {
  if (absl::Status tty = RefuseTerminal(cmd.output, cmd.format == Format::kPprof, cmd.force);
      !tty.ok()) {
    return Fail(tty.message());
  }
  proc::perf::LiveSamplerOptions sampler_options;
  sampler_options.frequency_hz = cmd.frequency_hz;
  absl::StatusOr<std::unique_ptr<proc::perf::LiveSampler>> sampler =
      proc::perf::LiveSampler::Start(cmd.pid, sampler_options);
  if (!sampler.ok()) return Fail(sampler.status().message());
  absl::StatusOr<OutputFile> out = OutputFile::Open(cmd.output);
  if (!out.ok()) return Fail(out.status().message());

  const absl::Time start = absl::Now();
  // The process's /tmp/perf-PID.map, seen from here (it may run in a
  // container), or ours once it has gone.
  proc::jit::PerfMaps perf_maps([](pid_t pid) {
    const std::string live = proc::jit::LivePerfMapPath(pid);
    return access(live.c_str(), R_OK) == 0 ? live : proc::jit::PerfMapPath(pid);
  });
  std::unique_ptr<SampleSink> sink =
      MakeSink(SinkFormatOf(cmd.format), out->file(), &perf_maps);
  PipelineOptions options;
  options.jobs = cmd.jobs > 0 ? cmd.jobs
                              : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (cmd.max_frames > 0) options.unwind.max_frames = cmd.max_frames;
  options.unwind.sources = cmd.sources;
  options.worker_formatter = sink->WorkerFormatter();
  options.write_text = [&sink](absl::string_view text) { sink->AddText(text); };
  SamplePipeline pipeline(options, [&sink](UnwoundSample& s) { sink->Add(s); });
  proc::perf::SnapshotOptions snapshot_options;
  // Live samples of this machine: its own vDSO is the sampled one.
  snapshot_options.use_own_vdso = true;
  SampleReader reader({}, (*sampler)->attrs(), (*sampler)->info(), std::move(snapshot_options),
                      pipeline);

  const absl::Time deadline =
      cmd.duration_s > 0 ? start + absl::Seconds(cmd.duration_s) : absl::InfiniteFuture();
  absl::Status read;
  bool exited = false;
  absl::Time jit_read = start;
  while (read.ok() && !interrupted->load() && absl::Now() < deadline) {
    read = (*sampler)->Poll(reader, std::min(kPollInterval, deadline - absl::Now()));
    // The runtime keeps writing its jitdump: what it added, once a second.
    if (const absl::Time now = absl::Now(); now - jit_read >= absl::Seconds(1)) {
      reader.RefreshJitDumps();
      jit_read = now;
    }
    if (!(*sampler)->ProcessAlive()) {
      exited = true;
      break;
    }
  }
  (*sampler)->Stop();
  if (read.ok()) read = (*sampler)->Poll(reader, absl::ZeroDuration());  // the rest
  pipeline.Finish();
  const absl::Duration took = absl::Now() - start;
  if (!read.ok()) return Fail(read.message());

  ProfileInfo info;
  info.time_nanos = absl::ToUnixNanos(start);
  info.duration_nanos = absl::ToInt64Nanoseconds(took);
  info.period = 1'000'000'000 / cmd.frequency_hz;  // cpu-clock ns between samples
  absl::Status written = sink->Finish(info);
  absl::Status closed = out->Close();
  if (!written.ok()) return Fail(written.message());
  if (!closed.ok()) return Fail(closed.message());
  std::fprintf(stderr,
               "unwind: %llu samples of %zu threads of process %d in %.1f s%s, %llu lost\n",
               static_cast<unsigned long long>((*sampler)->samples()), (*sampler)->threads(),
               cmd.pid, absl::ToDoubleSeconds(took), exited ? " (the process exited)" : "",
               static_cast<unsigned long long>((*sampler)->lost()));
  return 0;
}

}  // namespace unwindd::service::perf
