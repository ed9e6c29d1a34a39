#include "service/cli/perf/sample_reader.h"

#include <utility>

#include "proc/perf/abi.h"

namespace unwindd::service::perf {

SampleReader::SampleReader(const SampleFilters& filters, const proc::perf::AttrSet& attrs,
                           const proc::perf::RecordingInfo& info,
                           proc::perf::SnapshotOptions options, SamplePipeline& pipeline,
                           bool stacks_stay_valid)
    : attrs_(attrs),
      snapshots_(info, std::move(options)),
      pipeline_(pipeline),
      stacks_stay_valid_(stacks_stay_valid),
      pids_(filters.pids.begin(), filters.pids.end()),
      tids_(filters.tids.begin(), filters.tids.end()),
      comms_(filters.comms.begin(), filters.comms.end()) {}

absl::Status SampleReader::OnEvent(const proc::perf::Event& e) {
  maps_.Apply(e);
  if (e.type != proc::perf::kRecordSample) return absl::OkStatus();
  if (cancel_ != nullptr && cancel_->load(std::memory_order_relaxed)) {
    return absl::CancelledError("interrupted");
  }
  const proc::perf::Sample& sample = e.sample;
  if (!pids_.empty() && !pids_.contains(static_cast<pid_t>(sample.pid))) {
    return absl::OkStatus();
  }
  if (!tids_.empty() && !tids_.contains(static_cast<pid_t>(sample.tid))) {
    return absl::OkStatus();
  }
  const std::string& comm = maps_.ThreadComm(sample.tid);
  if (!comms_.empty() && !comms_.contains(comm)) return absl::OkStatus();
  if (e.attr_index < 0 || static_cast<size_t>(e.attr_index) >= attrs_.size()) {
    return absl::OkStatus();
  }
  const proc::perf::EventAttr& attr = attrs_.at(e.attr_index);
  UnwoundSample& s = pipeline_.Next();  // empty: filled in place
  s.comm = comm;
  s.pid = sample.pid;
  s.tid = sample.tid;
  if (attr.sample_type & proc::perf::kSampleCpu) s.cpu = sample.cpu;
  s.time_ns = sample.time;
  s.period = sample.period;
  s.event = attr.name;
  proc::perf::KernelCallchainInto(sample, s.kernel);
  absl::StatusOr<proc::perf::PerfSnapshotter::Resolved> r =
      snapshots_.Resolve(sample, attr, maps_.Find(sample.pid));
  if (!r.ok()) {
    s.error = std::string(r.status().message());
  } else {
    s.target_id = r->target_id;
    s.arch = r->arch;
    s.mappings = pipeline_.Hold(std::move(r->mappings));
    s.registers = r->registers;
    const absl::Span<const uint8_t> stack = sample.valid_stack();
    if (sample.stack_file_offset != 0) {
      // Left in the file (a sparse read): the worker reads it.
      s.stack_file_offset = sample.stack_file_offset;
      s.stack_file_bytes = sample.valid_stack_size();
    } else if (stacks_stay_valid_) {
      s.stack = stack;
    } else if (e.keep != nullptr) {
      // In a chunk of the input: held by the batch instead of copied.
      pipeline_.HoldBytes(*e.keep);
      s.stack = stack;
    } else {
      s.stack_copy.assign(stack.begin(), stack.end());
      s.stack = s.stack_copy;
    }
  }
  if (samples_ == 0) first_time_ = sample.time;
  last_time_ = sample.time;
  ++samples_;
  pipeline_.Commit();
  return absl::OkStatus();
}

}  // namespace unwindd::service::perf
