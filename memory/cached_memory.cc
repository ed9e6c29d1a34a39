// A page cache in front of another Memory. The unwinder reads a few bytes at
// a time (one CFA slot, one return address) from the same few stack and
// .eh_frame pages; every inner Read of a live process is a syscall, so we
// fetch each 4 KiB page once and serve the rest from here.
//
// Misses read ahead: an unwind walks up the stack, page after page, so a miss
// right where the previous read-ahead ended doubles the next one (2 pages
// up to 32), and a deep stack costs a handful of syscalls, not one per page.
// Random misses (code bytes, .eh_frame of a module read from memory) stay
// small.
//
// Reads of two pages or more go straight to the inner memory: they are a
// memory::StackWindow's bulk reads, which keep their own copy.
//
// Valid only while the inner memory does not change (a stopped target, a
// core, a snapshot): nothing is ever invalidated.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "memory/factories.h"
#include "memory/internal.h"
#include "memory/memory.h"

namespace unwindd::memory {
namespace {

// Target pages are at least 4 KiB on every supported arch; a larger real page
// size only means a readable region may end inside one of our pages, which
// partial pages handle.
constexpr uint64_t kPageSize = 4096;
constexpr uint64_t kMinReadAheadPages = 2;
constexpr uint64_t kMaxReadAheadPages = 32;
constexpr uint64_t kBypassBytes = 2 * kPageSize;

class CachedMemory final : public Memory {
 public:
  CachedMemory(std::unique_ptr<Memory> owned, Memory& inner, size_t max_pages)
      : owned_(std::move(owned)), inner_(&inner), max_pages_(max_pages) {}

  // Bulk by nature (stack windows): straight to the memory beneath, which
  // may do them in one system call.
  void ReadMany(absl::Span<ReadRequest> requests) override {
    inner_->ReadMany(requests);
  }

  size_t Read(uint64_t addr, absl::Span<uint8_t> dst) override {
    const uint64_t size = internal::ClampToAddressSpace(addr, dst.size());
    if (size == 0) return 0;
    // Bulk reads (a stack window's) are read once and kept by their
    // reader: copying them page by page through the cache buys nothing.
    if (max_pages_ == 0 || size >= kBypassBytes) return inner_->Read(addr, dst.first(size));
    std::lock_guard<std::mutex> lock(mu_);
    uint64_t done = 0;
    while (done < size) {
      uint64_t a = addr + done;
      uint64_t page = a & ~(kPageSize - 1);
      uint64_t offset = a - page;
      const std::vector<uint8_t>& bytes = PageLocked(page);
      if (bytes.size() <= offset) {
        // The page's readable prefix ends before `a`. Either `a` is
        // unreadable, or a readable region starts inside the page (a
        // snapshot or buffer that is not page-aligned): only the inner
        // memory knows, so ask it directly for the rest.
        return done + inner_->Read(a, dst.subspan(done, size - done));
      }
      uint64_t n = std::min<uint64_t>(bytes.size() - offset, size - done);
      std::memcpy(dst.data() + done, bytes.data() + offset, n);
      done += n;
      // A partial page means the readable region ends inside it.
      if (bytes.size() < kPageSize) break;
    }
    return done;
  }

 private:
  // The cached readable prefix of `page` (possibly empty), read on first use
  // together with the pages after it (see read-ahead above).
  const std::vector<uint8_t>& PageLocked(uint64_t page) {
    auto it = pages_.find(page);
    if (it != pages_.end()) return it->second;
    // Bounded memory: dropping everything is simpler than LRU and fine for
    // one unwind request, whose working set is small.
    read_ahead_ = page == next_sequential_
                      ? std::min(read_ahead_ * 2, kMaxReadAheadPages)
                      : kMinReadAheadPages;
    // Never past the top of the address space, never beyond the budget.
    uint64_t pages = std::min<uint64_t>(read_ahead_, max_pages_);
    pages = std::min<uint64_t>(pages, (~uint64_t{0} - page) / kPageSize + 1);
    if (pages_.size() + pages > max_pages_) pages_.clear();
    buffer_.resize(pages * kPageSize);
    size_t n = inner_->Read(page, absl::MakeSpan(buffer_));
    next_sequential_ = page + pages * kPageSize;
    for (uint64_t i = 0; i < pages; ++i) {
      uint64_t start = i * kPageSize;
      if (i > 0 && start >= n) break;  // past the readable region
      uint64_t len = n > start ? std::min<uint64_t>(n - start, kPageSize) : 0;
      std::vector<uint8_t> bytes(buffer_.begin() + start, buffer_.begin() + start + len);
      pages_.try_emplace(page + start, std::move(bytes));
      if (len < kPageSize) break;
    }
    return pages_.find(page)->second;
  }

  const std::unique_ptr<Memory> owned_;  // null for a view
  Memory* const inner_;
  const size_t max_pages_;
  // Guards everything below. A std::mutex: Debian's Abseil keeps deadlock-
  // detection bookkeeping on every absl::Mutex lock, and this one is taken
  // per read.
  std::mutex mu_;
  absl::flat_hash_map<uint64_t, std::vector<uint8_t>> pages_;
  std::vector<uint8_t> buffer_;
  uint64_t read_ahead_ = kMinReadAheadPages;
  uint64_t next_sequential_ = 0;
};

}  // namespace

std::unique_ptr<Memory> CreateCachedMemory(std::unique_ptr<Memory> inner,
                                           size_t max_pages) {
  Memory& ref = *inner;
  return std::make_unique<CachedMemory>(std::move(inner), ref, max_pages);
}

std::unique_ptr<Memory> CreateCachedMemoryView(Memory& inner, size_t max_pages) {
  return std::make_unique<CachedMemory>(nullptr, inner, max_pages);
}

}  // namespace unwindd::memory
