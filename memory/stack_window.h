// One thread's stack, read in bulk for one unwind: the step loop reads a
// return address and a few saved registers per frame, all from the stack
// just above sp, so one process_vm_readv of [sp, sp + a few pages) replaces
// a syscall per word, and frames further up grow the window by doubling
// (a 300-frame stack costs a handful of reads). Reads the window does not
// cover go to the memory beneath.
//
//   StackWindow stack(process_memory, sp);
//   if (!stack.holds_copy()) stack.ReadAhead(stack_lo, stack_hi);
//   uint64_t ra;
//   if (stack.ReadWordFast(cfa - 8, 8, &ra)) ...   // inline, no virtual call
//   ApplyRow(row, regs, stack, bias);              // it is a Memory too
//
// If the memory beneath already holds the stack as one flat copy (a
// snapshot: Memory::HeldBytesAt), the window is that copy, used in place;
// a copy held in two pieces (a server's received message split between
// two buffers) is read from whichever piece holds each word.
// Addresses are the target's. Valid while the target does not run (a
// stopped thread, a core, a snapshot); one unwind at a time.
#ifndef UNWINDD_MEMORY_STACK_WINDOW_H_
#define UNWINDD_MEMORY_STACK_WINDOW_H_

#include <cstdint>
#include <algorithm>
#include <cstring>
#include <memory>

#include "absl/types/span.h"
#include "memory/memory.h"

namespace unwindd::memory {

class StackWindow final : public Memory {
 public:
  // The largest copy kept (bigger stacks read the rest word by word).
  static constexpr uint64_t kMaxBytes = uint64_t{16} << 20;

  // `sp` is the thread's stack pointer. The window is the copy `inner`
  // holds of it, if any; else empty until ReadAhead.
  StackWindow(Memory& inner, uint64_t sp);
  bool holds_copy() const { return size_ > 0 && !growable_ && copied_ == 0; }
  // Starts reading the stack in bulk from sp, within [lo, hi): the mapping
  // that holds sp. Does nothing if sp is not in it or a copy is held.
  // `top_hint`, if above sp, is where the previous unwind of this stack
  // stopped reading (its outermost frames rarely move): the first read
  // ends there, so a repeated unwind costs one read of the right size.
  void ReadAhead(uint64_t lo, uint64_t hi, uint64_t top_hint = 0);
  // Where ReadAhead's first read ends (exclusive) for a thread whose sp is
  // `sp`; <= sp when it would read nothing. Lets a caller read the first
  // windows of several threads together (Memory::ReadMany) and hand each
  // its bytes with Adopt.
  static uint64_t FirstReadEnd(uint64_t sp, uint64_t lo, uint64_t hi,
                               uint64_t top_hint);
  // ReadAhead with its first read already done by the caller: `bytes`
  // (`capacity` bytes, from sp to FirstReadEnd) holds the `filled` bytes
  // that could be read. Does nothing (and drops `bytes`) in the cases
  // ReadAhead does nothing.
  void Adopt(uint64_t lo, uint64_t hi, std::unique_ptr<uint8_t[]> bytes,
             uint64_t capacity, uint64_t filled);
  // One past the highest window byte read so far (0 if none): the next
  // unwind's top_hint.
  uint64_t highest_read() const { return high_; }
  // The mark highest_read() is made from, to put back after reads that
  // were only a check (a replayed walk's, unwinder/walk_replay.h).
  uint64_t high_mark() const { return high_; }
  void reset_high_mark(uint64_t mark) { high_ = mark; }

  // A word of `size` (4 or 8) bytes, little-endian, zero-extended; false if
  // unreadable.
  bool ReadWordFast(uint64_t addr, int size, uint64_t* out) {
    const uint64_t off = addr - start_;
    if (off < size_ && size_ - off >= static_cast<uint64_t>(size)) {
      high_ = std::max(high_, addr + size);
      if (size == 8) {
        std::memcpy(out, data_ + off, 8);
      } else {
        uint32_t v;
        std::memcpy(&v, data_ + off, 4);
        *out = v;
      }
      return true;
    }
    return ReadWordSlow(addr, size, out);
  }

  size_t Read(uint64_t addr, absl::Span<uint8_t> dst) override;
  HeldBytes HeldBytesAt(uint64_t addr) override;

  // Bytes copied out of the memory beneath (0 for a held copy).
  uint64_t bytes_copied() const { return copied_; }

 private:
  bool ReadWordSlow(uint64_t addr, int size, uint64_t* out);
  // Whether [addr, addr + size) lies in the held copy's other piece.
  bool InOther(uint64_t addr, uint64_t size) const;
  // Makes the other piece the one read now.
  void SwapPieces();
  // Extends the copy upward so that it covers `addr` (best effort).
  void Grow(uint64_t addr);

  Memory& inner_;
  const uint64_t sp_;
  uint64_t hi_ = 0;
  std::unique_ptr<uint8_t[]> owned_;
  uint64_t capacity_ = 0;
  // The piece read now: the whole window, or of a copy held in two
  // pieces the one the last word came from.
  const uint8_t* data_ = nullptr;
  uint64_t start_ = 0;  // target address of data_[0]
  uint64_t size_ = 0;   // bytes valid in data_
  // A held copy's other piece (none: other_size_ 0); the two are adjacent.
  const uint8_t* other_data_ = nullptr;
  uint64_t other_start_ = 0;
  uint64_t other_size_ = 0;
  uint64_t high_ = 0;   // address one past the highest byte read (0: none)
  bool growable_ = false;
  uint64_t copied_ = 0;
};

}  // namespace unwindd::memory

#endif  // UNWINDD_MEMORY_STACK_WINDOW_H_
