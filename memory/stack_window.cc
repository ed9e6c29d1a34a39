#include "memory/stack_window.h"

#include <algorithm>
#include <utility>

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
    // The copy may go on in a second piece of its own.
    const uint64_t end = start_ + size_;
    if (HeldBytes next = inner.HeldBytesAt(end);
        end > start_ && next.start == end && !next.bytes.empty()) {
      other_data_ = next.bytes.data();
      other_start_ = next.start;
      other_size_ = next.bytes.size();
    }
  }
}

bool StackWindow::InOther(uint64_t addr, uint64_t size) const {
  const uint64_t off = addr - other_start_;
  return off < other_size_ && other_size_ - off >= size;
}

void StackWindow::SwapPieces() {
  std::swap(data_, other_data_);
  std::swap(start_, other_start_);
  std::swap(size_, other_size_);
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
  // In the held copy's other piece: read from it from now on (a walk goes
  // up the stack, so it changes pieces once).
  if (InOther(addr, size)) {
    SwapPieces();
    return ReadWordFast(addr, size, out);
  }
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
  for (int piece = 0; piece < 2; ++piece) {
    const uint8_t* const data = piece == 0 ? data_ : other_data_;
    const uint64_t start = piece == 0 ? start_ : other_start_;
    const uint64_t size = piece == 0 ? size_ : other_size_;
    const uint64_t off = addr - start;
    if (off >= size) continue;
    // The piece's part, then whatever lies beyond it: the other piece, or
    // the memory beneath.
    size_t n = std::min<uint64_t>(dst.size(), size - off);
    std::memcpy(dst.data(), data + off, n);
    high_ = std::max(high_, addr + n);
    if (n == dst.size()) return n;
    if (!HeldBytesAt(addr + n).bytes.empty()) return n + Read(addr + n, dst.subspan(n));
    return n + inner_.Read(addr + n, dst.subspan(n));
  }
  // Below the window (a red zone under sp), or nothing is held: never hide
  // window bytes behind a read from beneath.
  const uint64_t low = other_size_ > 0 ? std::min(start_, other_start_) : start_;
  if (addr < low && size_ > 0 && low - addr < dst.size()) {
    dst = dst.first(low - addr);
  }
  return inner_.Read(addr, dst);
}

Memory::HeldBytes StackWindow::HeldBytesAt(uint64_t addr) {
  if (addr - start_ < size_) return {start_, absl::MakeConstSpan(data_, size_)};
  if (addr - other_start_ < other_size_) {
    return {other_start_, absl::MakeConstSpan(other_data_, other_size_)};
  }
  return {};
}

}  // namespace unwindd::memory
