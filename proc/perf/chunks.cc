#include "proc/perf/chunks.h"

#include <sys/mman.h>

#include <atomic>
#include <cerrno>
#include <cstring>
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

ChunkedInput::ChunkedInput(Source source, size_t chunk_bytes, size_t max_free_chunks)
    : source_(std::move(source)), pool_(chunk_bytes, max_free_chunks) {}

absl::StatusOr<bool> ChunkedInput::Ensure(size_t n) {
  if (end_ - begin_ >= n) return true;
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

size_t ChunkedInput::DiscardAvailable() {
  const size_t n = end_ - begin_;
  begin_ = end_;
  return n;
}

}  // namespace unwindd::proc::perf
