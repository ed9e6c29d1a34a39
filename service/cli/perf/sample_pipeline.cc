#include "service/cli/perf/sample_pipeline.h"

#include <algorithm>
#include <list>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "memory/file_region_memory.h"
#include "service/cli/perf/huge_heap.h"
#include "proc/perf/records.h"
#include "unwinder/address_space.h"

namespace unwindd::service::perf {

// A worker's targets: one SnapshotTarget and AddressSpace per mapping table
// (target_id), least recently used dropped past kMaxTargetsPerWorker. Only
// its own thread touches them.
struct SamplePipeline::Worker {
  struct Space {
    std::unique_ptr<proc::SnapshotTarget> target;
    std::unique_ptr<unwinder::AddressSpace> space;
    std::list<uint64_t>::iterator lru;
    // Each module's description, made the first time a frame lands in it.
    std::vector<std::unique_ptr<const unwinder::ModuleInfo>> modules;
  };
  // Descriptions of dropped spaces, kept until the batch being unwound when
  // they were dropped (`seq`) has been written: its samples may point to
  // them.
  struct Retired {
    uint64_t seq = 0;
    std::vector<std::unique_ptr<const unwinder::ModuleInfo>> modules;
  };
  // Scratch: AddressSpace module index -> index in the sample's modules.
  std::vector<int> remap;
  // A sample's stack copy left in the file (stack_file_offset): read on
  // this thread, so that the walk finds it in this core's cache, or read in
  // place in the file's mapping. How each thread's last walks read theirs,
  // and the buffer (the largest copy perf records, allocated once).
  struct StackRead {
    uint32_t need = 0;      // bytes the last walks needed, rounded up
    bool in_place = false;  // its frames are large: read them in place
  };
  absl::flat_hash_map<uint32_t, StackRead> stack_reads;
  std::unique_ptr<uint8_t[]> stack_buffer;
  absl::flat_hash_map<uint64_t, Space> spaces;
  std::list<uint64_t> lru;  // most recently used first
  std::vector<Retired> retired;
  SampleFormatter format;   // this worker's own, or null
};

void UnwoundSample::Reset() {
  comm.clear();
  pid = tid = 0;
  cpu.reset();
  time_ns = period = 0;
  event.clear();
  kernel.clear();
  error.clear();
  target_id = 0;
  mappings = nullptr;
  stack = {};
  stack_copy.clear();
  stack_file_offset = stack_file_bytes = 0;
  user_callchain.clear();
  thread.frames.clear();
  thread.stop_detail.clear();
  modules.clear();
}

SamplePipeline::SamplePipeline(PipelineOptions options, Sink sink)
    : options_(std::move(options)), sink_(std::move(sink)) {
  const int jobs = std::clamp(options_.jobs, 1, kMaxJobs);
  // Before the threads start: they all allocate from it (huge_heap.h).
  UseHugePagesForHeap();
  workers_format_ = options_.worker_formatter != nullptr && options_.write_text != nullptr;
  open_.samples.resize(kBatchSamples);
  for (int i = 0; i < jobs; ++i) {
    workers_.push_back(std::make_unique<Worker>());
    if (workers_format_) workers_.back()->format = options_.worker_formatter();
  }
  inline_ = jobs == 1 && options_.inline_single_job;
  if (inline_) return;  // the one worker runs on the caller's thread
  // Two batches per worker keep every worker busy while the writer drains,
  // and the reader refills the second half while the first is unwound.
  max_in_flight_ = std::min<size_t>(kMaxBatchesInFlight, 2 * jobs + 4);
  for (int i = 0; i < jobs; ++i) {
    threads_.emplace_back([this, w = workers_[i].get()] { Work(*w); });
  }
  writer_ = std::thread([this] { Write(); });
}

SamplePipeline::~SamplePipeline() { Finish(); }

void SamplePipeline::Submit(UnwoundSample& sample) {
  std::swap(Next(), sample);
  sample.Reset();
  Commit();
}

const std::vector<proc::SnapshotMapping>* SamplePipeline::Hold(
    std::shared_ptr<const std::vector<proc::SnapshotMapping>> table) {
  if (open_.tables.empty() || open_.tables.back() != table) {
    open_.tables.push_back(std::move(table));
  }
  return open_.tables.back().get();
}

void SamplePipeline::Commit() {
  if (inline_) {
    RunInline();
    return;
  }
  UnwoundSample& s = open_.samples[open_.size];
  s.seq = next_sample_++;
  open_.held_bytes += s.stack_copy.size();
  if (++open_.size == kBatchSamples || open_.held_bytes >= kBatchHeldBytes) Flush();
}

void SamplePipeline::Flush() {
  if (open_.size == 0) return;
  open_.seq = next_seq_++;
  std::unique_lock<std::mutex> lock(mu_);
  if (in_flight_ >= max_in_flight_) {
    // Full: wait until the writer has drained half, then refill in one go
    // (one wake-up per half a window, not one per batch).
    reader_waiting_ = true;
    room_cv_.wait(lock, [this] { return in_flight_ <= max_in_flight_ / 2; });
    reader_waiting_ = false;
  }
  ++in_flight_;
  todo_.push_back(std::move(open_));
  work_cv_.notify_one();
  if (!free_.empty()) {
    open_ = std::move(free_.back());
    free_.pop_back();
  } else {
    open_ = Batch{};
    open_.samples.resize(kBatchSamples);
  }
  lock.unlock();
  open_.size = 0;
  open_.held_bytes = 0;
  open_.tables.clear();  // on this thread, which took the references
  // Its `bytes` are empty: the writer let go of them (Write).
}

namespace {

// Inline, text is written once a batch's worth has gathered.
constexpr size_t kInlineTextBytes = size_t{64} << 10;

}  // namespace

void SamplePipeline::RunInline() {
  Worker& w = *workers_.front();
  open_.samples[0].seq = next_sample_++;
  open_.seq = next_seq_++;
  open_.size = 1;
  UnwindBatch(w, open_);
  if (!workers_format_) {
    sink_(open_.samples[0]);
    open_.samples[0].Reset();
  } else if (open_.text.size() >= kInlineTextBytes) {
    WriteInlineText();
  }
  unwound_.fetch_add(1, std::memory_order_relaxed);
  // Written: nothing refers to what it held any more.
  open_.size = 0;
  open_.held_bytes = 0;
  open_.tables.clear();
  open_.bytes.clear();
  w.retired.clear();
}

void SamplePipeline::WriteInlineText() {
  if (open_.text.size() == 0) return;
  options_.write_text(open_.text.view());
  open_.text.clear();
}

void SamplePipeline::Finish() {
  if (finished_) return;
  finished_ = true;
  if (inline_) {
    if (workers_format_) WriteInlineText();
    return;
  }
  Flush();
  {
    std::lock_guard<std::mutex> lock(mu_);
    closing_ = true;
  }
  work_cv_.notify_all();
  for (std::thread& t : threads_) t.join();
  {
    std::lock_guard<std::mutex> lock(mu_);
  }
  done_cv_.notify_all();
  writer_.join();
}

void SamplePipeline::Work(Worker& w) {
  while (true) {
    Batch batch;
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_cv_.wait(lock, [this] { return !todo_.empty() || closing_; });
      if (todo_.empty()) return;
      batch = std::move(todo_.front());
      todo_.pop_front();
    }
    const uint64_t written = written_.load(std::memory_order_acquire);
    std::erase_if(w.retired, [&](const Worker::Retired& r) { return r.seq < written; });
    batch.text.clear();
    UnwindBatch(w, batch);
    unwound_.fetch_add(batch.size, std::memory_order_relaxed);
    bool wake_writer;
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_.emplace(batch.seq, std::move(batch));
      wake_writer = WriterMayGo();
    }
    if (wake_writer) done_cv_.notify_one();
  }
}

void SamplePipeline::UnwindBatch(Worker& w, Batch& batch) {
  for (size_t i = 0; i < batch.size; ++i) {
    UnwoundSample& s = batch.samples[i];
    if (!s.error.empty()) continue;
    auto it = w.spaces.find(s.target_id);
    if (it == w.spaces.end()) {
      absl::StatusOr<std::unique_ptr<proc::SnapshotTarget>> t =
          proc::SnapshotTarget::Create(s.arch, static_cast<pid_t>(s.pid), *s.mappings);
      if (!t.ok()) {
        s.error = std::string(t.status().message());
        continue;
      }
      if (w.spaces.size() >= kMaxTargetsPerWorker) {
        auto old = w.spaces.find(w.lru.back());
        w.retired.push_back({batch.seq, std::move(old->second.modules)});
        w.spaces.erase(old);
        w.lru.pop_back();
      }
      w.lru.push_front(s.target_id);
      Worker::Space sp;
      sp.target = *std::move(t);
      sp.space = std::make_unique<unwinder::AddressSpace>(*sp.target, cache_);
      sp.lru = w.lru.begin();
      it = w.spaces.emplace(s.target_id, std::move(sp)).first;
    } else {
      w.lru.splice(w.lru.begin(), w.lru, it->second.lru);
    }
    proc::SnapshotTarget& target = *it->second.target;
    Worker::Space& space = it->second;
    absl::Status unwound = s.user_callchain.empty() ? Unwind(w, s, target, *space.space)
                                                    : FramesOfCallchain(s, *space.space);
    if (!unwound.ok()) {
      s.error = std::string(unwound.message());
      continue;
    }
    // Frames' modules: AddressSpace indexes -> the sample's own list.
    const std::vector<unwinder::MappedModule>& mms = space.space->modules();
    space.modules.resize(mms.size());
    w.remap.assign(mms.size(), -1);
    for (unwinder::Frame& f : s.thread.frames) {
      if (f.module < 0) continue;
      int& to = w.remap[f.module];
      if (to < 0) {
        std::unique_ptr<const unwinder::ModuleInfo>& info = space.modules[f.module];
        if (info == nullptr) {
          info = std::make_unique<const unwinder::ModuleInfo>(
              unwinder::DescribeModule(mms[f.module]));
        }
        to = static_cast<int>(s.modules.size());
        s.modules.push_back(info.get());
      }
      f.module = to;
    }
  }
  if (w.format) {
    for (size_t i = 0; i < batch.size; ++i) w.format(batch.samples[i], &batch.text);
    // Only the text goes on: empty the samples here, where their memory
    // is still in this core's cache, not on the writer's.
    for (size_t i = 0; i < batch.size; ++i) batch.samples[i].Reset();
  }
}

namespace {

// What a thread's walks read of their stack copies, rounded up, with room
// for a deeper stack; what the first sample of a thread gets.
constexpr uint64_t kStackNeedSlack = 1024;
constexpr uint64_t kFirstStackNeed = 8192;
// A walk that needs more than was read goes again from the start (a deep
// stack's walk costs more than reading a few KiB more): when the copy is
// at most this much more than the need, all of it is read.
constexpr uint64_t kReadAllWithin = 8192;
// A thread whose last walk spanned at least this many bytes of stack a
// frame reads its next copy in place, in the file's mapping: a walk reads
// a few words of each frame, so most of a copy of large frames is bytes
// nobody reads, which pread would copy (frames of ~1.9 KiB: 16-44% less
// CPU). Where frames are small, a walk reads most of the lines of what it
// covers, and one pread of that costs less than the page fault and cache
// misses of reading it in place (frames of 50 and 280 bytes: 14% and 27%
// more CPU in place). Measured on this VM; see docs/speed.md.
constexpr uint64_t kInPlaceFrameBytes = 1024;

}  // namespace

absl::Span<const uint8_t> IntactCopy(const memory::FileMapping& file, uint64_t offset,
                                     uint64_t size) {
  const absl::Span<const uint8_t> bytes = file.bytes();
  const uint64_t end = file.intact_bytes();  // all of them unless it changed
  if (offset >= end) return {};
  return bytes.subspan(offset, std::min<uint64_t>(size, end - offset));
}

absl::Status SamplePipeline::Unwind(Worker& w, UnwoundSample& s, proc::SnapshotTarget& target,
                                    unwinder::AddressSpace& space) {
  // The kernel copies the user stack from the user SP upwards.
  const uint64_t sp = s.registers.sp();
  absl::Span<const uint8_t> stack = s.stack;
  uint64_t stack_end = 0;
  Worker::StackRead* read = nullptr;
  const memory::FileMapping* mapped = nullptr;  // the copy is read in place
  if (s.stack_file_bytes > 0 && options_.stack_file >= 0) {
    read = &w.stack_reads.try_emplace(s.tid, Worker::StackRead{kFirstStackNeed, false})
                .first->second;
    const uint64_t valid = std::min<uint64_t>(s.stack_file_bytes, proc::perf::kMaxStackUserBytes);
    if (read->in_place && options_.stack_mapping != nullptr) {
      // The walk touches the words it reads, not the whole copy.
      mapped = options_.stack_mapping;
      stack = IntactCopy(*mapped, s.stack_file_offset, valid);
    } else {
      // Read what this thread's walks needed lately; if this walk needs
      // more, it notices (SnapshotTarget::stack_missed) and goes again with
      // all of it.
      if (w.stack_buffer == nullptr) {
        w.stack_buffer.reset(new uint8_t[proc::perf::kMaxStackUserBytes]);
      }
      // Little more than that: all of it, rather than risk walking twice.
      const uint64_t want = valid <= read->need + kReadAllWithin ? valid : read->need;
      const size_t got = memory::PreadFully(options_.stack_file, w.stack_buffer.get(), want,
                                            s.stack_file_offset);
      stack = absl::MakeConstSpan(w.stack_buffer.get(), got);
      // A file that shrank gives less: the stack ends where the bytes do.
      if (got == want) stack_end = sp + valid;
    }
  }
  // Consecutive samples of a thread share their outer frames: the walk
  // takes them from the thread's recorded walk when its return addresses
  // read the same (unwinder/walk_replay.h).
  unwinder::UnwindOptions unwind = options_.unwind;
  unwind.thread_key = unwinder::ThreadKey(s.tid);
  for (int attempt = 0; attempt < 2; ++attempt) {
    absl::Status set = target.SetSample(
        {static_cast<pid_t>(s.tid), s.registers, sp, stack, nullptr, stack_end});
    if (!set.ok()) return set;
    unwinder::UnwindRegistersInto(space, target.memory(), s.registers, unwind, &s.thread);
    const bool missed = target.stack_missed();
    target.ClearSample();
    if (mapped != nullptr && mapped->changed()) {
      // The file shrank under us: what the walk read past its new end were
      // zeros. Again with the bytes still there, as a pread would give.
      const absl::Span<const uint8_t> intact =
          IntactCopy(*mapped, s.stack_file_offset, stack.size());
      if (intact.size() < stack.size()) {
        stack = intact;
        if (attempt == 0) continue;
      }
    }
    if (!missed) break;
    // The walk needed more: all of it.
    const uint64_t have = stack.size();
    const size_t more = memory::PreadFully(options_.stack_file, w.stack_buffer.get() + have,
                                           stack_end - sp - have, s.stack_file_offset + have);
    stack = absl::MakeConstSpan(w.stack_buffer.get(), have + more);
    stack_end = 0;
  }
  s.thread.tid = static_cast<pid_t>(s.tid);
  if (read != nullptr) {
    // Round up to 512, keep the larger of this walk's need and most of the
    // last ones' (a thread's depth varies).
    const uint64_t used = s.thread.stack_high > sp ? s.thread.stack_high - sp : 0;
    const uint64_t next = ((used + kStackNeedSlack) + 511) & ~uint64_t{511};
    read->need = static_cast<uint32_t>(
        std::min<uint64_t>(std::max<uint64_t>(next, read->need - read->need / 16), UINT32_MAX));
    const uint64_t frames = s.thread.frames.size();
    read->in_place = frames > 1 && used / frames >= kInPlaceFrameBytes;
  }
  return absl::OkStatus();
}

absl::Status SamplePipeline::FramesOfCallchain(UnwoundSample& s,
                                               unwinder::AddressSpace& space) const {
  // The sampled PC, then each return address the kernel's walk found, in
  // the module that holds it (a return address is looked up one byte
  // before it, in the call). A return address of 0 ends the stack, as it
  // ends a walk: the kernel records the 0 it read past the outermost
  // frame (whose frame pointer is 0), and perf script prints it.
  const size_t limit = static_cast<size_t>(options_.unwind.max_frames);
  const size_t n = std::min(s.user_callchain.size(), limit);
  s.thread.frames.clear();
  for (size_t i = 0; i < n; ++i) {
    const uint64_t pc = s.user_callchain[i];
    if (i > 0 && pc == 0) break;
    const arch::FrameAddress at = i == 0 ? arch::FrameAddress::InstructionPointer(pc)
                                         : arch::FrameAddress::ReturnAddress(pc);
    unwinder::MappedModule* mm = space.Find(at.LookupAddress());
    const uint64_t rel_pc = mm != nullptr && mm->bias_known ? pc - mm->load_bias : 0;
    s.thread.frames.push_back(unwinder::Frame{
        pc, 0, i == 0 ? unwinder::Method::kInitial : unwinder::Method::kFramePointer,
        space.IndexOf(mm), rel_pc});
  }
  s.thread.tid = static_cast<pid_t>(s.tid);
  // Where the kernel's walk stopped and why is not recorded: a chain cut
  // at the frame limit says so, any other ends where the kernel's did.
  s.thread.stop = s.thread.frames.size() == limit && limit < s.user_callchain.size() &&
                          s.user_callchain[limit] != 0
                      ? unwinder::StopReason::kMaxFrames
                      : unwinder::StopReason::kEndOfStack;
  return absl::OkStatus();
}

void SamplePipeline::Write() {
  while (true) {
    Batch batch;
    {
      std::unique_lock<std::mutex> lock(mu_);
      done_cv_.wait(lock, [this] { return WriterMayGo(); });
      if (done_.empty() || done_.begin()->first != written_.load()) return;
      batch = std::move(done_.begin()->second);
      done_.erase(done_.begin());
    }
    if (workers_format_) {
      options_.write_text(batch.text.view());  // its samples are empty already
    } else {
      for (size_t i = 0; i < batch.size; ++i) sink_(batch.samples[i]);
      for (size_t i = 0; i < batch.size; ++i) batch.samples[i].Reset();
    }
    bool wake_reader;
    {
      std::lock_guard<std::mutex> lock(mu_);
      written_.store(written_.load() + 1, std::memory_order_release);
      --in_flight_;
      batch.size = 0;
      // The input it held goes back to the reader's pool now, not when
      // the batch is reused: a free batch holding chunks would double the
      // memory in use.
      batch.bytes.clear();
      free_.push_back(std::move(batch));
      wake_reader = reader_waiting_ && in_flight_ <= max_in_flight_ / 2;
    }
    if (wake_reader) room_cv_.notify_one();
  }
}

bool SamplePipeline::WriterMayGo() const {
  if (done_.empty()) return closing_ && todo_.empty() && in_flight_ == 0;
  if (done_.begin()->first != written_.load()) return false;
  // Two batches at a time (one wake-up for both), unless nothing else is
  // coming soon: every batch in flight is unwound (the reader is slower,
  // or waits for input, as `unwind profile` does), or the end.
  return done_.size() >= 2 || done_.size() == in_flight_ || closing_;
}

}  // namespace unwindd::service::perf
