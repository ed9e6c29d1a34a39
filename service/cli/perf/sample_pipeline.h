// Unwinding a stream of profiler samples on several threads, with the
// results delivered in the samples' order: what `unwind perf` and `unwind
// profile` share. The caller's thread reads and resolves samples (their
// process's mapping table at their time: proc/perf/perf_snapshot.h) and
// Submits them; workers unwind them over SnapshotTargets and AddressSpaces
// of their own (one per mapping table, kept while it lasts); one writer
// thread hands each result, in submission order, to the sink. With one
// job and PipelineOptions::inline_single_job (`unwind perf`'s default),
// there are no threads: Commit unwinds the sample and writes it at once.
//
//   SamplePipeline pipeline(options, [&](UnwoundSample& s) { sink.Add(s); });
//   UnwoundSample job;
//   for (each sample) { fill job; pipeline.Submit(job); }  // job is reset
//   pipeline.Finish();   // every result delivered
//
// Memory is bounded: at most 2 * jobs + 4 (<= kMaxBatchesInFlight) batches
// of kBatchSamples
// samples (their stack copies included) are queued or being unwound. Once
// warm it allocates nothing per sample: batches, their samples' buffers and
// the unwinder's frame vectors are recycled, module descriptions are made
// once per module and shared, and a stack the source keeps in place (a
// mapped perf.data) is not copied.
#ifndef UNWINDD_SERVICE_CLI_PERF_SAMPLE_PIPELINE_H_
#define UNWINDD_SERVICE_CLI_PERF_SAMPLE_PIPELINE_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "arch/register_set.h"
#include "memory/file_mapping.h"
#include "proc/snapshot_target.h"
#include "service/cli/perf_script/text_buffer.h"
#include "unwinder/address_space.h"
#include "unwinder/module_cache.h"
#include "unwinder/unwinder.h"

namespace unwindd::service::perf {

inline constexpr size_t kBatchSamples = 64;
// A batch also ends once its samples hold this many bytes of the input
// (HoldBytes) or of copies: with samples of 32 KiB and more, 64 of them
// in each of the batches in flight would hold tens of MiB of chunks, each
// chunk new memory the kernel must zero, where a window of a few MiB is
// recycled.
inline constexpr size_t kBatchHeldBytes = size_t{1} << 20;
inline constexpr size_t kMaxBatchesInFlight = 16;
inline constexpr int kMaxJobs = 64;
// Per worker: the mapping tables (processes) whose targets it keeps.
inline constexpr size_t kMaxTargetsPerWorker = 64;

// One sample: what the reader knows of it, then what the unwind found.
struct UnwoundSample {
  // Its place among the samples submitted (0, 1, ...), set by Commit.
  uint64_t seq = 0;
  // From the recording.
  std::string comm;
  uint32_t pid = 0;
  uint32_t tid = 0;
  std::optional<uint32_t> cpu;
  uint64_t time_ns = 0;
  uint64_t period = 0;
  std::string event;              // "cpu-clock"
  std::vector<uint64_t> kernel;   // the kernel part of the callchain
  // Why the sample could not be unwound ("" when it was): no user
  // registers, no mappings, ...
  std::string error;
  // What to unwind (set unless `error`): the mapping table (shared by every
  // sample with the same target_id), the registers, the stack copy from sp
  // (`stack`: either `stack_copy`, or bytes the source keeps valid until
  // Finish).
  uint64_t target_id = 0;
  arch::Arch arch = arch::Arch::kX86_64;
  // Kept alive by the pipeline while the sample is (SamplePipeline::Hold):
  // a pointer, not a shared_ptr, because the reader, a worker and the
  // writer each touching a shared count per sample made the count's cache
  // line move between cores on every sample.
  const std::vector<proc::SnapshotMapping>* mappings = nullptr;
  arch::RegisterSet registers;
  absl::Span<const uint8_t> stack;
  std::vector<uint8_t> stack_copy;
  // Or: the stack copy is in PipelineOptions::stack_file, these many valid
  // bytes from this offset (a sparse read of a perf.data file), and the
  // worker reads what the walk needs.
  uint64_t stack_file_offset = 0;
  uint64_t stack_file_bytes = 0;
  // Or, for a sample recorded with a user callchain instead of registers
  // and a stack copy (perf record -g): the kernel's frame-pointer walk,
  // sampled PC first. Its frames are those addresses, not unwound.
  std::vector<uint64_t> user_callchain;
  // The result: one thread, and the modules its frames refer to
  // (Frame::module indexes `modules`; the pipeline keeps each alive until
  // the sample has been written).
  unwinder::ThreadStack thread;
  std::vector<const unwinder::ModuleInfo*> modules;

  // Empties it for the next sample, keeping its buffers.
  void Reset();
};

// Appends one sample's output text to `out`, on a worker thread right
// after its unwind; each worker gets its own from the factory, so a
// formatter may keep state (caches) without locks.
using SampleFormatter = std::function<void(const UnwoundSample&, cli::TextBuffer* out)>;
using SampleFormatterFactory = std::function<SampleFormatter()>;

struct PipelineOptions {
  int jobs = 1;  // worker threads
  // With one job, unwind each sample on the thread that Commits it, at
  // once, and write its result there: no threads, no hand-offs, and the
  // stack copy the reader has just read is still in this core's cache.
  // For a file (`unwind perf --jobs=1`), not for a live sampler, whose
  // reader must keep draining its ring buffers while samples are unwound.
  bool inline_single_job = false;
  unwinder::UnwindOptions unwind;
  // When both are set, output is formatted on the workers in parallel, a
  // batch's samples into one buffer, and the writer thread hands each
  // batch's text to `write_text`, in order, instead of samples to the sink.
  SampleFormatterFactory worker_formatter;
  std::function<void(absl::string_view text)> write_text;
  // The file samples' stack copies are read from (UnwoundSample::
  // stack_file_offset); -1 if none is. Not owned.
  int stack_file = -1;
  // The same file mapped (PerfDataReader::stack_mapping), if it is: then
  // the copies of threads whose frames are large are read in place, not
  // with pread (kInPlaceFrameBytes). Not owned.
  const memory::FileMapping* stack_mapping = nullptr;
};

// The bytes [offset, offset + size) of a stack copy left in a mapped
// file, or those of them still in the file: where the file shrank under
// the mapping (the pages past its new end read as zeros), the copy ends
// where its intact bytes do, as a pread of it would.
absl::Span<const uint8_t> IntactCopy(const memory::FileMapping& file, uint64_t offset,
                                     uint64_t size);

class SamplePipeline {
 public:
  using Sink = std::function<void(UnwoundSample&)>;
  // `sink` runs on the pipeline's writer thread, one sample at a time, in
  // Submit order.
  SamplePipeline(PipelineOptions options, Sink sink);
  ~SamplePipeline();  // Finish()
  SamplePipeline(const SamplePipeline&) = delete;
  SamplePipeline& operator=(const SamplePipeline&) = delete;

  // Takes `sample` (swapping it into the batch: `sample` comes back Reset,
  // with recycled buffers). Blocks while kMaxBatchesInFlight batches are in
  // flight.
  void Submit(UnwoundSample& sample);
  // The same without moving a sample: Next() is the slot the next sample
  // goes in (empty, with recycled buffers); fill it, then Commit().
  UnwoundSample& Next() { return open_.samples[open_.size]; }
  void Commit();
  // Keeps `table` alive until the open batch has been written, and returns
  // it for UnwoundSample::mappings (one reference per batch and table, not
  // one per sample).
  const std::vector<proc::SnapshotMapping>* Hold(
      std::shared_ptr<const std::vector<proc::SnapshotMapping>> table);
  // Keeps `bytes` (what a sample's stack points into: a chunk of the
  // input, Event::keep) alive until the open batch has been written;
  // `size`: how much of it the sample's record takes (kBatchHeldBytes).
  void HoldBytes(const std::shared_ptr<const void>& bytes, size_t size) {
    if (open_.bytes.empty() || open_.bytes.back() != bytes) open_.bytes.push_back(bytes);
    open_.held_bytes += size;
  }
  // Unwinds what was submitted, delivers every result, joins the threads.
  void Finish();

  uint64_t unwound() const { return unwound_.load(); }

 private:
  struct Batch {
    uint64_t seq = 0;
    size_t size = 0;  // samples[0, size) are this batch's
    size_t held_bytes = 0;  // of the input and of copies, by its samples
    std::vector<UnwoundSample> samples;  // kBatchSamples, recycled
    cli::TextBuffer text;  // the samples' output, when workers format (recycled)
    // The mapping tables its samples point to (Hold).
    std::vector<std::shared_ptr<const std::vector<proc::SnapshotMapping>>> tables;
    std::vector<std::shared_ptr<const void>> bytes;  // HoldBytes
  };
  struct Worker;

  void Flush();  // hands the open batch to the workers
  void Work(Worker& w);
  // Unwinds batch.samples[0, size) and, when the worker formats, appends
  // their text to batch.text and empties them.
  void UnwindBatch(Worker& w, Batch& batch);
  // inline_: the committed sample, unwound and written on this thread.
  void RunInline();
  void WriteInlineText();
  // Unwinds `s` over `target` and `space` (its stack copy read from the
  // stack file when it is there).
  absl::Status Unwind(Worker& w, UnwoundSample& s, proc::SnapshotTarget& target,
                      unwinder::AddressSpace& space);
  // The frames of `s`'s user_callchain, with their modules in `space`.
  absl::Status FramesOfCallchain(UnwoundSample& s, unwinder::AddressSpace& space) const;
  void Write();
  // Whether the writer has something to do (under mu_): the next batch in
  // order and one more after it, or the last ones, or the end.
  bool WriterMayGo() const;

  PipelineOptions options_;
  Sink sink_;
  unwinder::ModuleCache cache_;
  Batch open_;
  uint64_t next_seq_ = 0;
  uint64_t next_sample_ = 0;

  std::mutex mu_;
  std::condition_variable work_cv_;   // a batch to unwind, or the end
  std::condition_variable done_cv_;   // a batch unwound, or the end
  std::condition_variable room_cv_;   // a batch written
  std::deque<Batch> todo_;
  std::map<uint64_t, Batch> done_;    // unwound, by seq, not yet written
  std::vector<Batch> free_;           // written, for reuse
  size_t in_flight_ = 0;
  size_t max_in_flight_ = kMaxBatchesInFlight;
  bool reader_waiting_ = false;  // Flush waits for room
  bool closing_ = false;
  bool finished_ = false;
  bool workers_format_ = false;  // worker_formatter and write_text set
  bool inline_ = false;  // one job, run on the caller's thread (RunInline)
  std::atomic<uint64_t> unwound_{0};
  // Batches written so far, which is the seq the writer writes next. Module
  // descriptions a worker dropped while unwinding a batch below it can be
  // freed. Only the writer stores it, under mu_.
  std::atomic<uint64_t> written_{0};

  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<std::thread> threads_;
  std::thread writer_;
};

}  // namespace unwindd::service::perf

#endif  // UNWINDD_SERVICE_CLI_PERF_SAMPLE_PIPELINE_H_
