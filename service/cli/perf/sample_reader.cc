#include "service/cli/perf/sample_reader.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "memory/scoped_fd.h"

#include "proc/perf/abi.h"

namespace unwindd::service::perf {
namespace {

constexpr size_t kMaxJitWarnings = 16;

}  // namespace

SampleReader::SampleReader(const SampleFilters& filters, const proc::perf::AttrSet& attrs,
                           const proc::perf::RecordingInfo& info,
                           proc::perf::SnapshotOptions options, SamplePipeline& pipeline,
                           bool stacks_stay_valid)
    : attrs_(attrs),
      snapshots_(info, options),
      pipeline_(pipeline),
      stacks_stay_valid_(stacks_stay_valid),
      pids_(filters.pids.begin(), filters.pids.end()),
      tids_(filters.tids.begin(), filters.tids.end()),
      comms_(filters.comms.begin(), filters.comms.end()),
      locate_(std::move(options.locate)) {}

void SampleReader::JitWarning(std::string w) {
  if (jit_warnings_.size() < kMaxJitWarnings) jit_warnings_.push_back(std::move(w));
}

void SampleReader::LoadJitDump(uint32_t pid, const std::string& recorded) {
  for (const JitDumpFile& d : jit_dumps_) {
    if (d.pid == pid && d.recorded == recorded) return;  // mapped again
  }
  jit_dumps_.push_back({pid, recorded});
  ReadJitDump(jit_dumps_.back());
}

void SampleReader::ReadJitDump(JitDumpFile& d) {
  const std::string path = locate_ ? locate_(d.recorded) : d.recorded;
  memory::ScopedFd fd = memory::OpenCloexec(path.c_str(), O_RDONLY | O_NONBLOCK);
  struct stat st;
  if (!fd.valid() || fstat(fd.get(), &st) != 0) {
    if (d.size == 0) {
      JitWarning(absl::StrCat(d.recorded, ": ", std::strerror(errno),
                              "; the JIT code it names is unwound by frame pointer"));
    }
    return;
  }
  if (static_cast<uint64_t>(st.st_size) == d.size) return;  // nothing new
  d.size = static_cast<uint64_t>(st.st_size);
  absl::StatusOr<std::vector<proc::jit::JitRegion>> regions =
      proc::jit::LoadJitDumpFile(fd.get(), proc::jit::kMaxJitDumpBytes, d.recorded);
  if (!regions.ok()) {
    JitWarning(absl::StrCat(d.recorded, ": ", regions.status().message()));
    return;
  }
  // The dump's times are CLOCK_MONOTONIC's: comparable with the samples'
  // only when perf recorded with that clock.
  bool timed = false;
  for (const proc::perf::EventAttr& a : attrs_.attrs()) timed |= a.monotonic_clock();
  if (!timed && d.regions_taken == 0) {
    JitWarning(absl::StrCat(
        d.recorded, ": the recording's clock is not CLOCK_MONOTONIC (perf record -k mono), "
                    "the JIT dump's: its code is mapped all at once, the last code loaded at "
                    "an address taking it"));
  }
  // A dump grows by whole records at its end (a re-read parses the same
  // prefix): the regions past those taken are new.
  if (regions->size() <= d.regions_taken) return;
  JitTimeline& t = jit_[d.pid];
  for (size_t i = d.regions_taken; i < regions->size(); ++i) {
    proc::jit::JitRegion& r = (*regions)[i];
    if (!timed) r.time = 0;
    t.regions.push_back(std::move(r));
  }
  d.regions_taken = regions->size();
  std::stable_sort(t.regions.begin() + t.next, t.regions.end(),
                   [](const auto& a, const auto& b) { return a.time < b.time; });
}

void SampleReader::RefreshJitDumps() {
  for (JitDumpFile& d : jit_dumps_) ReadJitDump(d);
}

void SampleReader::MapJitCodeUpTo(uint32_t pid, uint64_t time) {
  auto it = jit_.find(pid);
  if (it == jit_.end()) return;
  JitTimeline& t = it->second;
  while (t.next < t.regions.size() && t.regions[t.next].time <= time) {
    const proc::jit::JitRegion& r = t.regions[t.next++];
    maps_.AddCode(pid, r.mapping, r.code, r.time);
  }
}

absl::Status SampleReader::OnEvent(const proc::perf::Event& e) {
  maps_.Apply(e);
  if ((e.type == proc::perf::kRecordMmap2 || e.type == proc::perf::kRecordMmap) &&
      proc::jit::IsJitDumpPath(e.mmap.filename)) {
    LoadJitDump(e.mmap.pid, std::string(e.mmap.filename));
  }
  if (e.type != proc::perf::kRecordSample) return absl::OkStatus();
  if (!jit_.empty()) MapJitCodeUpTo(e.sample.pid, e.sample.time);
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
  constexpr uint64_t kUserStack = proc::perf::kSampleRegsUser | proc::perf::kSampleStackUser;
  UnwoundSample& s = pipeline_.Next();  // empty: filled in place
  s.comm = comm;
  s.pid = sample.pid;
  s.tid = sample.tid;
  if (attr.sample_type & proc::perf::kSampleCpu) s.cpu = sample.cpu;
  s.time_ns = sample.time;
  s.period = sample.period;
  s.event = attr.name;
  proc::perf::KernelCallchainInto(sample, s.kernel);
  proc::perf::PerfSnapshotter::Resolved& r = resolved_;
  const proc::perf::ProcessTable* table = maps_.Find(sample.pid);
  absl::Status resolved = snapshots_.Resolve(sample, attr, table, r);
  if (!resolved.ok() && absl::IsFailedPrecondition(resolved) && table != nullptr &&
      (attr.sample_type & proc::perf::kSampleCallchain)) {
    // No registers and stack copy (perf record -g): the frames are the
    // user callchain the kernel recorded, if any.
    proc::perf::UserCallchainInto(sample, s.user_callchain);
    if (!s.user_callchain.empty()) {
      resolved = snapshots_.ResolveWithoutRegisters(sample, table, r);
    }
  }
  // Recorded with neither (perf record without -g): said once at the end.
  // A kernel thread's sample in a -g recording has no user chain either,
  // and nothing to say.
  if ((attr.sample_type & kUserStack) != kUserStack &&
      !(attr.sample_type & proc::perf::kSampleCallchain)) {
    ++samples_without_user_stack_;
  }
  if (!resolved.ok()) {
    s.error = std::string(resolved.message());
  } else {
    s.target_id = r.target_id;
    s.arch = r.arch;
    s.mappings = pipeline_.Hold(std::move(r.mappings));
    s.registers = r.registers;
    const absl::Span<const uint8_t> stack = sample.valid_stack();
    if (sample.stack_file_offset != 0) {
      // Left in the file (a sparse read): the worker reads it.
      s.stack_file_offset = sample.stack_file_offset;
      s.stack_file_bytes = sample.valid_stack_size();
    } else if (e.keep != nullptr) {
      // In a chunk of the input, or decompressed (perf record -z): held by
      // the batch instead of copied.
      pipeline_.HoldBytes(*e.keep, e.record.size());
      s.stack = stack;
    } else if (stacks_stay_valid_) {
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
