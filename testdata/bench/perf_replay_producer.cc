#include "testdata/bench/perf_replay_producer.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "service/common/convert.h"
#include "service/common/snapshot_requests.h"

namespace unwindd::replay {
namespace {

// The server keeps at most 1024 tables per stream; past this many the
// least recently used one is released (and sent again if needed).
constexpr size_t kMaxLiveTables = 512;

proc::perf::SnapshotOptions SnapshotOptionsFor(const ReplayOptions& o) {
  proc::perf::SnapshotOptions s;
  s.buildid_dir = o.buildid_dir;
  return s;
}

}  // namespace

Producer::Producer(const ReplayOptions& options, const proc::perf::PerfDataReader& reader,
                   BatchSink& sink, Window& window, bool fill_expected,
                   unwinder::ModuleCache& cache, const locate::LocateOptions& locate,
                   PassResult& result)
    : options_(options),
      reader_(reader),
      sink_(sink),
      window_(window),
      fill_expected_(fill_expected && !options.floor),
      snap_(reader.info(), SnapshotOptionsFor(options)),
      cache_(cache),
      locate_(locate),
      result_(result) {
  if (options.max_frames != 0) unwind_options_.max_frames = options.max_frames;
}

absl::Status Producer::OnEvent(const proc::perf::Event& e) {
  maps_.Apply(e);
  if (e.type != proc::perf::kRecordSample) return absl::OkStatus();
  if (e.attr_index < 0 || static_cast<size_t>(e.attr_index) >= reader_.attrs().size()) {
    ++result_.skipped;
    return absl::OkStatus();
  }
  const proc::perf::Sample& sample = e.sample;
  const proc::perf::EventAttr& attr = reader_.attrs().at(e.attr_index);
  const proc::perf::ProcessTable* table = maps_.Find(sample.pid);
  proc::perf::PerfSnapshotter::Resolved resolved;
  const proc::perf::PerfSnapshotter::Resolved* r = &resolved;
  if (!snap_.Resolve(sample, attr, table, resolved).ok()) {
    ++result_.skipped;
    return absl::OkStatus();
  }
  const uint64_t id = next_id_++;
  const uint64_t table_id = options_.floor ? kNeverSentTable : UseTable(*r, id);
  v1::SnapshotRequest* req = batch_.add_samples();
  req->set_sample_id(id);
  req->set_pid(SentPid(sample.pid));
  req->set_tid(static_cast<int32_t>(sample.tid));
  req->set_arch(service::ToProto(r->arch));
  regs_.resize(sample.regs_user.size());
  for (size_t i = 0; i < regs_.size(); ++i) regs_[i] = sample.regs_user[i];
  service::PerfRegistersToProto(attr.sample_regs_user, regs_, req->mutable_perf_registers());
  // The kernel copies the user stack from the user SP upwards
  // (kernel/events/core.c: perf_output_sample_ustack).
  const absl::Span<const uint8_t> stack = sample.valid_stack();
  req->set_stack_address(r->registers.sp());
  req->set_stack(stack.data(), stack.size());
  req->set_mapping_table_id(table_id);
  if (options_.max_frames != 0) req->set_max_frames(options_.max_frames);
  result_.stack_bytes += stack.size();
  if (fill_expected_) pending_expected_.push_back(InProcess(sample, attr, table));
  if (batch_.samples_size() >= options_.batch) return Flush();
  return absl::OkStatus();
}

absl::Status Producer::Finish() {
  absl::Status s = Flush();
  sink_.Done();
  return s;
}

int32_t Producer::SentPid(uint32_t pid) {
  switch (options_.pid) {
    case ReplayOptions::Pid::kRecorded:
      return static_cast<int32_t>(pid);
    case ReplayOptions::Pid::kNone:
      return 0;
    case ReplayOptions::Pid::kExited:
      break;
  }
  auto [it, added] = exited_.try_emplace(pid, false);
  if (added) it->second = kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
  return it->second ? static_cast<int32_t>(pid) : 0;
}

// The id of the table `r`'s sample uses, sent in this batch if the stream
// does not have it; an older table of the same process is released after
// the batch.
uint64_t Producer::UseTable(const proc::perf::PerfSnapshotter::Resolved& r,
                            uint64_t sample) {
  LiveTable& t = tables_[r.pid];
  t.last_use = sample;
  if (t.id == r.target_id) return t.id;
  if (t.id != 0) Release(t.id);
  t.id = r.target_id;
  v1::MappingTable* mt = batch_.add_mapping_tables();
  mt->set_id(t.id);
  for (const proc::SnapshotMapping& m : *r.mappings) {
    service::MappingToProto(m, /*with_image=*/true, mt->add_mappings());
  }
  ++result_.tables;
  ++live_;
  // Defined in this batch: it must not be released at its end.
  release_.erase(std::remove(release_.begin(), release_.end(), t.id), release_.end());
  if (live_ > kMaxLiveTables) EvictOldest(r.pid);
  return t.id;
}

void Producer::Release(uint64_t id) {
  release_.push_back(id);
  --live_;
}

// Releases the least recently used table of another process than `keep`,
// unless the current batch still uses it.
void Producer::EvictOldest(uint32_t keep) {
  auto oldest = tables_.end();
  for (auto it = tables_.begin(); it != tables_.end(); ++it) {
    if (it->first == keep || it->second.id == 0) continue;
    if (oldest == tables_.end() || it->second.last_use < oldest->second.last_use) {
      oldest = it;
    }
  }
  if (oldest == tables_.end() || oldest->second.last_use >= batch_first_) return;
  Release(oldest->second.id);
  oldest->second.id = 0;
}

// The frames an in-process unwind of the sample gives: UnwindTarget over
// the SnapshotTarget the snapshotter builds, one AddressSpace per process
// table, as `unwind perf` does.
std::vector<uint64_t> Producer::InProcess(const proc::perf::Sample& sample,
                                          const proc::perf::EventAttr& attr,
                                          const proc::perf::ProcessTable* table) {
  absl::StatusOr<proc::perf::PerfSnapshotter::Prepared> p = snap_.Prepare(sample, attr, table);
  std::vector<uint64_t> pcs;
  if (!p.ok()) return pcs;
  Space& s = spaces_[sample.pid];
  if (s.id != p->target_id) {
    s.space.reset();
    s.target = p->target;
    s.id = p->target_id;
    s.space = std::make_unique<unwinder::AddressSpace>(*s.target, cache_, &locate_);
  }
  unwinder::ProcessStacks st = unwinder::UnwindTarget(*s.target, *s.space, unwind_options_);
  p->target->ClearSample();
  if (!st.threads.empty()) {
    for (const unwinder::Frame& f : st.threads[0].frames) pcs.push_back(f.pc);
  }
  return pcs;
}

absl::Status Producer::Flush() {
  const int n = batch_.samples_size();
  if (n == 0 && batch_.mapping_tables_size() == 0 && release_.empty()) {
    return absl::OkStatus();
  }
  for (uint64_t id : release_) batch_.add_release_mapping_table_ids(id);
  release_.clear();
  {
    absl::MutexLock l(&window_.mu);
    if (fill_expected_) {
      for (std::vector<uint64_t>& pcs : pending_expected_) {
        window_.expected->push_back(std::move(pcs));
      }
      pending_expected_.clear();
    }
    auto room = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(window_.mu) {
      return window_.reader_done ||
             window_.written + n <= window_.answered + options_.window;
    };
    window_.mu.Await(absl::Condition(&room));
    if (window_.reader_done) return absl::AbortedError("the reader stopped");
    window_.written += n;
  }
  result_.request_bytes += batch_.ByteSizeLong();
  if (!sink_.Write(batch_)) return absl::UnavailableError("the stream is closed");
  batch_.Clear();  // keeps the samples' objects and their strings' room
  ++batches_;
  batch_first_ = next_id_;
  return absl::OkStatus();
}

void WarmFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  std::vector<char> buf(1 << 20);
  while (read(fd, buf.data(), buf.size()) > 0) {
  }
  close(fd);
}

}  // namespace unwindd::replay
