// FileRegionMemory: target address ranges read with pread() from files.
//
// Overlaps are resolved once, at construction, by a sweep over the region
// boundaries (O(n log n) however the regions overlap): every elementary
// interval goes to the earliest region that covers it, and Read is then a
// binary search over disjoint pieces.
#include "memory/file_region_memory.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"

namespace unwindd::memory {
namespace {

struct Piece {
  uint64_t start;  // target address
  uint64_t end;    // exclusive
  int fd;
  uint64_t file_offset;  // of `start`
};

class FileRegionMemory final : public Memory {
 public:
  FileRegionMemory(std::vector<std::shared_ptr<const ScopedFd>> files,
                   std::vector<Piece> pieces)
      : files_(std::move(files)), pieces_(std::move(pieces)) {}

  size_t Read(uint64_t addr, absl::Span<uint8_t> dst) override {
    if (dst.empty()) return 0;
    auto it = std::upper_bound(
        pieces_.begin(), pieces_.end(), addr,
        [](uint64_t a, const Piece& p) { return a < p.start; });
    if (it == pieces_.begin()) return 0;
    --it;
    if (addr >= it->end) return 0;
    // Stops at the end of the piece: the caller asks again for the rest,
    // which may come from another file.
    const uint64_t n = std::min<uint64_t>(dst.size(), it->end - addr);
    return PreadFully(it->fd, dst.data(), n,
                      it->file_offset + (addr - it->start));
  }

 private:
  // Keeps every file open for as long as a piece refers to it.
  const std::vector<std::shared_ptr<const ScopedFd>> files_;
  const std::vector<Piece> pieces_;  // disjoint, sorted by start
};

}  // namespace

size_t PreadFully(int fd, uint8_t* dst, size_t size, uint64_t offset) {
  size_t done = 0;
  while (done < size) {
    // Offsets past INT64_MAX cannot be expressed to pread(): unreadable.
    if (offset + done > static_cast<uint64_t>(INT64_MAX)) break;
    ssize_t n =
        pread(fd, dst + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  return done;
}

absl::StatusOr<std::unique_ptr<Memory>> CreateFileRegionMemory(
    std::vector<FileRegion> regions) {
  if (regions.size() > kMaxFileRegions) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%d file regions, more than the limit of %d",
                        regions.size(), kMaxFileRegions));
  }
  // Boundary events: (address, region index, is_start).
  struct Event {
    uint64_t addr;
    size_t index;
    bool start;
  };
  std::vector<Event> events;
  events.reserve(regions.size() * 2);
  for (size_t i = 0; i < regions.size(); ++i) {
    const FileRegion& r = regions[i];
    if (r.size == 0) continue;
    if (r.file == nullptr || !r.file->valid()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("file region at 0x%x has no open file", r.start));
    }
    if (r.size > UINT64_MAX - r.start) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "file region at 0x%x of 0x%x bytes wraps the address space", r.start,
          r.size));
    }
    events.push_back({r.start, i, true});
    events.push_back({r.start + r.size, i, false});
  }
  std::sort(events.begin(), events.end(),
            [](const Event& a, const Event& b) { return a.addr < b.addr; });

  std::vector<Piece> pieces;
  std::set<size_t> active;  // indexes of regions covering the sweep point
  for (size_t e = 0; e < events.size();) {
    const uint64_t x = events[e].addr;
    for (; e < events.size() && events[e].addr == x; ++e) {
      if (events[e].start) {
        active.insert(events[e].index);
      } else {
        active.erase(events[e].index);
      }
    }
    if (active.empty() || e == events.size()) continue;
    const uint64_t next = events[e].addr;
    const FileRegion& w = regions[*active.begin()];
    const uint64_t offset = w.file_offset + (x - w.start);
    // Merge with the previous piece when it is the same region continuing.
    if (!pieces.empty() && pieces.back().end == x &&
        pieces.back().fd == w.file->get() &&
        pieces.back().file_offset + (x - pieces.back().start) == offset) {
      pieces.back().end = next;
    } else {
      pieces.push_back({x, next, w.file->get(), offset});
    }
  }

  std::vector<std::shared_ptr<const ScopedFd>> files;
  for (FileRegion& r : regions) {
    if (r.file != nullptr) files.push_back(std::move(r.file));
  }
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  return std::make_unique<FileRegionMemory>(std::move(files),
                                            std::move(pieces));
}

}  // namespace unwindd::memory
