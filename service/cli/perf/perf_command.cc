#include "service/cli/perf/perf_command.h"

#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "memory/scoped_fd.h"
#include "proc/jit/perf_map.h"
#include "proc/perf/perf_data.h"
#include "proc/perf/perf_snapshot.h"
#include "service/cli/perf/output_file.h"
#include "service/cli/perf/sample_pipeline.h"
#include "service/cli/perf/sample_reader.h"
#include "service/cli/perf/sinks.h"

namespace unwindd::service::perf {
namespace {

void Warn(absl::string_view msg) {
  std::fprintf(stderr, "unwind: %.*s\n", static_cast<int>(msg.size()), msg.data());
}

}  // namespace

int RunPerf(const Command& cmd, const std::atomic<bool>* cancel) {
  // A file is read sparsely: the workers read the samples' stack copies
  // from it themselves (proc/perf/sparse_reader.h).
  if (absl::Status tty = RefuseTerminal(cmd.output, cmd.format == Format::kPprof, cmd.force);
      !tty.ok()) {
    Warn(tty.message());
    return 1;
  }
  absl::StatusOr<std::unique_ptr<proc::perf::PerfDataReader>> reader =
      cmd.path == "-"
          ? proc::perf::PerfDataReader::OpenStream(memory::ScopedFd(dup(0)))
          : proc::perf::PerfDataReader::OpenFile(cmd.path, {}, proc::perf::FileAccess::kSparse);
  if (!reader.ok()) {
    Warn(reader.status().message());
    return 1;
  }
  absl::StatusOr<OutputFile> out = OutputFile::Open(cmd.output);
  if (!out.ok()) {
    Warn(out.status().message());
    return 1;
  }
  proc::perf::SnapshotOptions snapshot_options;
  if (!cmd.sysroot.empty()) {
    snapshot_options.locate = [sysroot = cmd.sysroot](const std::string& p) {
      return sysroot + p;
    };
  }
  if (const char* home = getenv("HOME"); home != nullptr) {
    snapshot_options.buildid_dir = absl::StrCat(home, "/.debug");  // perf's
  }
  // A recording of this machine's kernel may use our own vDSO, as perf
  // script does for pipe recordings (perf_snapshot.h).
  snapshot_options.use_own_vdso = true;

  // perf's /tmp/perf-PID.map files, read where perf script reads them (in
  // --sysroot when given).
  proc::jit::PerfMaps perf_maps([sysroot = cmd.sysroot](pid_t pid) {
    return sysroot + proc::jit::PerfMapPath(pid);
  });
  std::unique_ptr<SampleSink> sink =
      MakeSink(SinkFormatOf(cmd.format), out->file(), &perf_maps);
  PipelineOptions options;
  // One job by default, run on the reading thread: the least CPU a
  // sample costs (no hand-offs between threads, and each stack copy is
  // unwound while the reader's core still has it in its cache). More jobs
  // buy wall time with CPU (docs/speed.md).
  options.jobs = cmd.jobs > 0 ? cmd.jobs : 1;
  if (cmd.max_frames > 0) options.unwind.max_frames = cmd.max_frames;
  options.unwind.sources = cmd.sources;
  options.worker_formatter = sink->WorkerFormatter();
  options.write_text = [&sink](absl::string_view text) { sink->AddText(text); };
  options.unwind.cancel = cancel;
  options.stack_file = (*reader)->stack_file();
  options.stack_mapping = (*reader)->stack_mapping();
  options.inline_single_job = true;  // a file waits; a live sampler cannot
  SamplePipeline pipeline(options, [&sink](UnwoundSample& s) { sink->Add(s); });
  SampleReader handler({cmd.pids, cmd.tids, cmd.comms}, (*reader)->attrs(),
                       (*reader)->info(), std::move(snapshot_options), pipeline,
                       (*reader)->records_outlive_delivery());
  handler.set_cancel(cancel);
  absl::Status read = (*reader)->Read(handler);
  pipeline.Finish();
  // `perf record -g` (frame-pointer call chains) or no call graph at all:
  // the samples have no user stacks, and every one comes out empty. Said
  // once here; the JSON output says it per sample.
  if (const uint64_t n = handler.samples_without_user_stack(); n > 0) {
    Warn(absl::StrCat(
        "warning: ", n, " of ", handler.samples(),
        " samples have no user registers and stack copy to unwind, nor a user call "
        "chain (recorded without --call-graph dwarf or -g): record with perf record "
        "--call-graph dwarf ..."));
  }
  for (const std::string& w : (*reader)->warnings().kept()) Warn(absl::StrCat("warning: ", w));
  for (const std::string& w : handler.jit_warnings()) Warn(absl::StrCat("warning: ", w));
  for (const proc::perf::FileReport& f : handler.snapshots().files()) {
    if (!f.error.empty()) Warn(absl::StrCat("warning: ", f.recorded_path, ": ", f.error));
  }
  ProfileInfo info;
  info.duration_nanos = static_cast<int64_t>(handler.last_time_ns() - handler.first_time_ns());
  absl::Status written = sink->Finish(info);
  absl::Status closed = out->Close();
  if (!read.ok()) {
    Warn(read.message());
    return 1;
  }
  if (!written.ok() || !closed.ok()) {
    Warn((!written.ok() ? written : closed).message());
    return 1;
  }
  return 0;
}

}  // namespace unwindd::service::perf
