#include "memory/stack_window.h"

#include <algorithm>

namespace unwindd::memory {
namespace {

constexpr uint64_t kPage = 4096;
// Enough for the frames of a thread blocked in a system call; deeper
// stacks double it.
constexpr uint64_t kFirstReadPages = 2;
// Beyond a hinted top, and the least a hinted first read asks for.
constexpr uint64_t kHintSlack = 256;
constexpr uint64_t kMinFirstRead = 512;

}  // namespace

StackWindow::StackWindow(Memory& inner, uint64_t sp) : inner_(inner), sp_(sp) {
  if (HeldBytes held = inner.HeldBytesAt(sp); !held.bytes.empty()) {
    data_ = held.bytes.data();
    start_ = held.start;
    size_ = held.bytes.size();
  }
}

uint64_t StackWindow::FirstReadEnd(uint64_t sp, uint64_t lo, uint64_t hi,
                                   uint64_t top_hint) {
  if (hi <= sp || sp < lo) return sp;
  // Without a hint: to the end of sp's page and one more, since the stack
  // grows down and what the callers saved is above sp. With one: up to it
  // and a little beyond, for a frame that moved (deeper stacks still grow
  // the window on their own).
  uint64_t end = top_hint > sp ? std::max(top_hint + kHintSlack, sp + kMinFirstRead)
                               : (sp & ~(kPage - 1)) + kFirstReadPages * kPage;
  if (end < sp) end = hi;  // wrapped
  return std::min({hi, end, sp + kMaxBytes});
}

void StackWindow::ReadAhead(uint64_t lo, uint64_t hi, uint64_t top_hint) {
  if (size_ > 0 || growable_ || hi <= sp_ || sp_ < lo) return;
  hi_ = hi;
  start_ = sp_;
  growable_ = true;
  Grow(FirstReadEnd(sp_, lo, hi, top_hint) - 1);
}

void StackWindow::Adopt(uint64_t lo, uint64_t hi, std::unique_ptr<uint8_t[]> bytes,
                        uint64_t capacity, uint64_t filled) {
  if (size_ > 0 || growable_ || hi <= sp_ || sp_ < lo || bytes == nullptr ||
      filled > capacity || capacity > hi - sp_) {
    return;
  }
  hi_ = hi;
  start_ = sp_;
  owned_ = std::move(bytes);
  capacity_ = capacity;
  data_ = owned_.get();
  size_ = filled;
  copied_ = filled;
  // As after Grow's first read: a short one means the rest of the mapping
  // is unreadable.
  growable_ = filled == capacity;
}

void StackWindow::Grow(uint64_t addr) {
  if (!growable_ || addr < start_ || addr >= hi_) return;
  const uint64_t end = start_ + size_;
  if (addr < end) return;
  // The first read ends at `addr`; later ones double the window, at page
  // granularity. Never past the mapping or the limit.
  uint64_t want = addr + 1;
  if (size_ > 0) {
    want = std::max<uint64_t>(addr + 8, end + std::max(size_, kPage));
    want = (want + kPage - 1) & ~(kPage - 1);
  }
  want = std::min({want, hi_, start_ + kMaxBytes});
  if (want <= end) {
    growable_ = false;
    return;
  }
  const uint64_t new_size = want - start_;
  if (new_size > capacity_) {
    // Not value-initialized: every byte up to size_ is written before use.
    std::unique_ptr<uint8_t[]> bigger(new uint8_t[new_size]);
    if (size_ > 0) std::memcpy(bigger.get(), data_, size_);
    owned_ = std::move(bigger);
    capacity_ = new_size;
    data_ = owned_.get();
  }
  const size_t n =
      inner_.Read(end, absl::MakeSpan(owned_.get() + size_, want - end));
  copied_ += n;
  size_ += n;
  // A short read: the rest of the mapping is unreadable (a guard page):
  // stop trying.
  if (n < want - end) growable_ = false;
}

bool StackWindow::ReadWordSlow(uint64_t addr, int size, uint64_t* out) {
  if (size != 4 && size != 8) return false;
  // Read grows the window when addr is above it.
  uint8_t buf[8] = {};
  if (!ReadFully(addr, absl::MakeSpan(buf, size)).ok()) return false;
  uint64_t v = 0;
  std::memcpy(&v, buf, 8);
  *out = v;
  return true;
}

size_t StackWindow::Read(uint64_t addr, absl::Span<uint8_t> dst) {
  if (dst.empty()) return 0;
  if (growable_ && addr >= start_) Grow(addr + dst.size() - 1);
  const uint64_t off = addr - start_;
  if (off < size_) {
    // The window's part, then whatever lies beyond it.
    size_t n = std::min<uint64_t>(dst.size(), size_ - off);
    std::memcpy(dst.data(), data_ + off, n);
    high_ = std::max(high_, off + n);
    if (n == dst.size()) return n;
    return n + inner_.Read(addr + n, dst.subspan(n));
  }
  // Below the window (a red zone under sp), or nothing is held: never hide
  // window bytes behind a read from beneath.
  if (addr < start_ && size_ > 0 && start_ - addr < dst.size()) {
    dst = dst.first(start_ - addr);
  }
  return inner_.Read(addr, dst);
}

Memory::HeldBytes StackWindow::HeldBytesAt(uint64_t addr) {
  if (addr - start_ >= size_) return {};
  return {start_, absl::MakeConstSpan(data_, size_)};
}

}  // namespace unwindd::memory
