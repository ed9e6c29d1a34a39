// Input bytes read into recycled, reference-counted chunks, so that a
// record can be handed on without a copy and stays valid for as long as
// somebody holds its chunk (a queued record, a sample being unwound).
//
// Why not a mapping: mapping a perf.data's pages cost as much as copying
// them once into buffers that stay mapped, or more (on a VM whose guest
// page tables the host shadows, much more), and the walks then read
// stack copies no copy has brought into the cache, while the whole file
// counts in the peak RSS (docs/speed.md); and a pipe cannot be mapped.
// (The exception: large stack copies of large frames, which `unwind perf`
// leaves in the file and reads in place, service/cli/perf/sample_pipeline.cc.)
//
//   ChunkedInput in(source, {.chunk_bytes = 2 << 20, .max_free_chunks = 16});
//   while (in.Ensure(n)) {           // n bytes at in.data(), or the end
//     use(in.data(), in.chunk());    // hold in.chunk() to keep them
//     in.Consume(n);
//   }
#ifndef UNWINDD_PROC_PERF_CHUNKS_H_
#define UNWINDD_PROC_PERF_CHUNKS_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/status/statusor.h"

namespace unwindd::proc::perf {

// Buffers of one size, given back to the pool when the last reference to
// them drops (on any thread). Memory in use is counted, so that a reader
// can stop handing out references past a budget.
class ChunkPool {
 public:
  // `chunk_bytes`: each buffer's size; `max_free`: buffers kept for reuse.
  ChunkPool(size_t chunk_bytes, size_t max_free);
  ~ChunkPool();
  ChunkPool(const ChunkPool&) = delete;
  ChunkPool& operator=(const ChunkPool&) = delete;

  // A buffer of chunk_bytes(); freed or recycled when the last copy of
  // the pointer is gone. May outlive the pool.
  std::shared_ptr<uint8_t> Take();

  size_t chunk_bytes() const;
  // Bytes of the buffers handed out and not yet given back.
  uint64_t in_use_bytes() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

// A sequential input (a file from an offset, or a stream) read through a
// ChunkPool: Ensure(n) makes n contiguous bytes available, copying the
// few left at a chunk's end to the start of the next one when a record
// straddles two reads.
//
// Read ahead (Options::read_ahead_headroom), the source is called on a
// thread of the input's own, one chunk ahead of the caller: copying a
// file out of the page cache then overlaps with decoding the chunk before
// it, instead of being half of the reader's time (see docs/speed.md
// "Scaling"). Each chunk read ahead starts `read_ahead_headroom` bytes in,
// where the end of the chunk before it is copied; Ensure(n) may ask for at
// most that many. Only for a source whose reads end (a regular file): the
// destructor waits for a read in flight.
class ChunkedInput {
 public:
  // Reads up to `n` bytes into `dst`: the count, 0 at the end, -1 with
  // errno set on error (EINTR is retried by the caller).
  using Source = std::function<ssize_t(uint8_t* dst, size_t n)>;

  struct Options {
    size_t chunk_bytes = 0;      // Ensure may ask for up to this many
    size_t max_free_chunks = 0;  // kept for reuse
    size_t read_ahead_headroom = 0;  // 0: the source is read on the caller
  };

  ChunkedInput(Source source, Options options);
  ~ChunkedInput();  // waits for a read in flight
  ChunkedInput(const ChunkedInput&) = delete;
  ChunkedInput& operator=(const ChunkedInput&) = delete;

  // True when `n` bytes are available at data(); false at the end of the
  // input before that (the bytes there, fewer than n, are still at data()).
  absl::StatusOr<bool> Ensure(size_t n);
  const uint8_t* data() const { return chunk_.get() + begin_; }
  size_t available() const { return end_ - begin_; }
  void Consume(size_t n) { begin_ += n; }
  // Goes past up to `n` bytes the source has already given (available()
  // and, read ahead, the chunk being read, which it waits for) without
  // reading more. Less than `n` means nothing read is left and no read is
  // in flight: the caller may move the source past the rest itself.
  uint64_t Skip(uint64_t n);
  // The chunk data() points into; holding it keeps those bytes.
  const std::shared_ptr<uint8_t>& chunk() const { return chunk_; }
  uint64_t in_use_bytes() const { return pool_.in_use_bytes(); }

 private:
  struct Ahead;  // the read-ahead thread and the chunk it reads

  absl::StatusOr<bool> EnsureAhead(size_t n);
  void StartAhead();  // a read of the next chunk, on the thread
  // Waits for the read in flight and makes its bytes the available ones
  // (after what is left of this chunk); false at the end or on an error.
  bool TakeAhead();

  Source source_;
  ChunkPool pool_;
  std::shared_ptr<uint8_t> chunk_;
  size_t begin_ = 0;  // unconsumed bytes are chunk_[begin_, end_)
  size_t end_ = 0;
  bool at_end_ = false;
  std::unique_ptr<Ahead> ahead_;  // null: read on the caller
};

}  // namespace unwindd::proc::perf

#endif  // UNWINDD_PROC_PERF_CHUNKS_H_
