#include "proc/perf/chunks.h"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <system_error>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"

namespace unwindd::proc::perf {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;

// A buffer of `n` bytes. One of kHugePage bytes is placed on a huge-page
// boundary and asked to be one huge page (transparent huge pages in
// "madvise" mode): its first touch is then one page fault instead of
// 512. Null when there is no memory.
uint8_t* Allocate(size_t n) {
  if (n != kHugePage) return new (std::nothrow) uint8_t[n];
  void* p = mmap(nullptr, 2 * n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  const uintptr_t start = reinterpret_cast<uintptr_t>(p);
  const uintptr_t aligned = (start + n - 1) & ~(uintptr_t{n} - 1);
  if (aligned > start) munmap(p, aligned - start);
  if (aligned + n < start + 2 * n) {
    munmap(reinterpret_cast<void*>(aligned + n), start + 2 * n - (aligned + n));
  }
  madvise(reinterpret_cast<void*>(aligned), n, MADV_HUGEPAGE);  // a hint
  return reinterpret_cast<uint8_t*>(aligned);
}

void Free(uint8_t* p, size_t n) {
  if (n != kHugePage) {
    delete[] p;
  } else {
    munmap(p, n);
  }
}

}  // namespace

struct ChunkPool::State {
  State(size_t bytes, size_t max) : chunk_bytes(bytes), max_free(max) {}
  ~State() {
    for (uint8_t* p : free) Free(p, chunk_bytes);
  }
  const size_t chunk_bytes;
  const size_t max_free;
  std::mutex mu;
  std::vector<uint8_t*> free;  // guarded by mu
  std::atomic<uint64_t> in_use{0};
};

ChunkPool::ChunkPool(size_t chunk_bytes, size_t max_free)
    : state_(std::make_shared<State>(chunk_bytes, max_free)) {}

ChunkPool::~ChunkPool() = default;

size_t ChunkPool::chunk_bytes() const { return state_->chunk_bytes; }

uint64_t ChunkPool::in_use_bytes() const {
  return state_->in_use.load(std::memory_order_relaxed);
}

std::shared_ptr<uint8_t> ChunkPool::Take() {
  uint8_t* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    if (!state_->free.empty()) {
      p = state_->free.back();
      state_->free.pop_back();
    }
    state_->in_use += state_->chunk_bytes;
  }
  if (p == nullptr) p = Allocate(state_->chunk_bytes);
  if (p == nullptr) {
    state_->in_use -= state_->chunk_bytes;
    return nullptr;
  }
  // The deleter holds the state: a chunk may outlive its pool.
  return std::shared_ptr<uint8_t>(p, [state = state_](uint8_t* q) {
    bool keep;
    {
      std::lock_guard<std::mutex> lock(state->mu);
      state->in_use -= state->chunk_bytes;
      keep = state->free.size() < state->max_free;
      if (keep) state->free.push_back(q);
    }
    if (!keep) Free(q, state->chunk_bytes);
  });
}

// One thread that calls the source for the next chunk while the caller
// decodes the current one. Only the caller starts a read (Start) and takes
// its result (Take), so the source is called by one thread at a time, in
// order, and what it changes is seen by the caller after Take.
struct ChunkedInput::Ahead {
  // A chunk read, or why not.
  struct Read {
    std::shared_ptr<uint8_t> chunk;  // bytes at [headroom, headroom + size)
    size_t size = 0;                 // 0 with an ok status: the end
    absl::Status status;
  };

  Ahead(Source& source, size_t headroom, size_t capacity)
      : source(source), headroom(headroom), capacity(capacity) {}

  ~Ahead() {
    {
      std::lock_guard<std::mutex> lock(mu);
      stopping = true;
    }
    cv.notify_all();
    if (thread.joinable()) thread.join();
  }

  // Reads into `chunk` on the thread. Nothing may be in flight or waiting.
  void Start(std::shared_ptr<uint8_t> chunk) {
    {
      std::lock_guard<std::mutex> lock(mu);
      next.chunk = std::move(chunk);
      requested = true;
    }
    started = true;
    if (!thread.joinable()) {
      try {
        thread = std::thread([this] { Run(); });
      } catch (const std::system_error&) {
        // No thread to be had (a process or memory limit): read it now.
        ReadNext();
        std::lock_guard<std::mutex> lock(mu);
        requested = false;
        return;
      }
    }
    cv.notify_all();
  }

  // The read started last (`started` must be true), once it is done.
  Read Take() {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [this] { return !requested; });
    started = false;
    return std::move(next);
  }

  void Run() {
    std::unique_lock<std::mutex> lock(mu);
    while (true) {
      cv.wait(lock, [this] { return requested || stopping; });
      if (stopping) return;
      lock.unlock();
      ReadNext();
      lock.lock();
      requested = false;
      cv.notify_all();
    }
  }

  // Fills `next` (its chunk is the thread's until `requested` is cleared).
  void ReadNext() {
    ssize_t r;
    do {
      r = source(next.chunk.get() + headroom, capacity - headroom);
    } while (r < 0 && errno == EINTR);
    next.status = r < 0 ? absl::ErrnoToStatus(errno, "read") : absl::OkStatus();
    next.size = r > 0 ? static_cast<size_t>(r) : 0;
  }

  Source& source;
  const size_t headroom;
  const size_t capacity;
  // The caller's own: a read started and not yet taken; why the input
  // stopped (a read error, or no memory for a chunk).
  bool started = false;
  absl::Status ended;
  std::mutex mu;
  std::condition_variable cv;
  Read next;               // guarded by mu
  bool requested = false;  // guarded by mu: `next` is being read
  bool stopping = false;   // guarded by mu
  std::thread thread;
};

ChunkedInput::ChunkedInput(Source source, Options options)
    : source_(std::move(source)), pool_(options.chunk_bytes, options.max_free_chunks) {
  if (options.read_ahead_headroom > 0 && options.read_ahead_headroom < options.chunk_bytes) {
    ahead_ = std::make_unique<Ahead>(source_, options.read_ahead_headroom, options.chunk_bytes);
  }
}

ChunkedInput::~ChunkedInput() = default;

absl::StatusOr<bool> ChunkedInput::Ensure(size_t n) {
  if (end_ - begin_ >= n) return true;
  if (ahead_ != nullptr) return EnsureAhead(n);
  const size_t capacity = pool_.chunk_bytes();
  if (n > capacity) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%d bytes asked of a %d-byte chunk", n, capacity));
  }
  if (chunk_ == nullptr || capacity - begin_ < n) {
    // The rest of this chunk cannot hold `n` bytes: move what is left of
    // it to the front of a chunk nobody else holds (this one, if so).
    const size_t left = end_ - begin_;
    if (chunk_ != nullptr && chunk_.use_count() == 1) {
      std::memmove(chunk_.get(), chunk_.get() + begin_, left);
    } else {
      std::shared_ptr<uint8_t> next = pool_.Take();
      if (next == nullptr) {
        return absl::ResourceExhaustedError(
            absl::StrFormat("no memory for a %d-byte read buffer", capacity));
      }
      if (left > 0) std::memcpy(next.get(), chunk_.get() + begin_, left);
      chunk_ = std::move(next);
    }
    begin_ = 0;
    end_ = left;
  }
  while (end_ - begin_ < n && !at_end_) {
    const ssize_t r = source_(chunk_.get() + end_, capacity - end_);
    if (r < 0) {
      if (errno == EINTR) continue;
      return absl::ErrnoToStatus(errno, "read");
    }
    if (r == 0) {
      at_end_ = true;
      break;
    }
    end_ += static_cast<size_t>(r);
  }
  return end_ - begin_ >= n;
}

absl::StatusOr<bool> ChunkedInput::EnsureAhead(size_t n) {
  if (n > ahead_->headroom) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%d bytes asked of an input read ahead with %d bytes of headroom", n, ahead_->headroom));
  }
  while (end_ - begin_ < n && !at_end_) {
    if (ahead_->ended.ok() && !ahead_->started) StartAhead();  // read now
    if (!ahead_->started) return ahead_->ended;  // a read error, or no memory
    if (!TakeAhead()) {
      if (!ahead_->ended.ok()) return ahead_->ended;  // the input stops here
      break;                                         // the end
    }
    StartAhead();  // the next chunk, while the caller decodes this one
  }
  return end_ - begin_ >= n;
}

bool ChunkedInput::TakeAhead() {
  Ahead::Read read = ahead_->Take();
  if (!read.status.ok()) {
    ahead_->ended = read.status;  // for good: the source is not read again
    return false;
  }
  if (read.size == 0) {
    at_end_ = true;
    return false;
  }
  // What is left of this chunk (fewer than headroom bytes: Ensure asks for
  // at most that many) goes in front of the new one's bytes.
  const size_t left = end_ - begin_;
  const size_t at = ahead_->headroom - left;
  if (left > 0) std::memcpy(read.chunk.get() + at, chunk_.get() + begin_, left);
  chunk_ = std::move(read.chunk);
  begin_ = at;
  end_ = ahead_->headroom + read.size;
  return true;
}

void ChunkedInput::StartAhead() {
  std::shared_ptr<uint8_t> next = pool_.Take();
  if (next == nullptr) {
    ahead_->ended = absl::ResourceExhaustedError(
        absl::StrFormat("no memory for a %d-byte read buffer", pool_.chunk_bytes()));
    return;
  }
  ahead_->Start(std::move(next));
}

uint64_t ChunkedInput::Skip(uint64_t n) {
  uint64_t skipped = std::min<uint64_t>(n, end_ - begin_);
  begin_ += skipped;
  // Short of n, nothing is left here; a read in flight has more, and an
  // error or the end it brings is kept for the next Ensure.
  while (skipped < n && ahead_ != nullptr && ahead_->started && TakeAhead()) {
    const uint64_t take = std::min<uint64_t>(n - skipped, end_ - begin_);
    begin_ += take;
    skipped += take;
  }
  return skipped;
}

}  // namespace unwindd::proc::perf
