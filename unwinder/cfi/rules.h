// What a Row's rules mean (DWARF 5 §6.4.1), defined once for every applier:
// ApplyRow's general path and its fast path (apply.h), and
// CompactRow::ApplyInPlace (compact_row.h), which the step loop's cache
// uses. A change to a rule's meaning is a change here.
//
//   uint64_t cfa;
//   if (!rules::OffsetAddress(regs.Get(row.cfa.reg), row.cfa.offset, mask, &cfa)) ...
//   uint64_t saved;
//   if (rules::ReadSavedAt(cfa, rule.value, mask, read_word, &saved)) ...
//
// Addresses are target addresses, `mask` the target's address width (all
// ones for 64-bit targets, 0xffffffff for 32-bit ones).
#ifndef UNWINDD_UNWINDER_CFI_RULES_H_
#define UNWINDD_UNWINDER_CFI_RULES_H_

#include <cstdint>

namespace unwindd::unwinder::rules {

// `base + offset` ("CFA = reg + offset", "at / is CFA + offset"): false when
// the sum wraps past either end of the address space or leaves the target's
// address width, which means the unwind info is wrong for this frame.
// Every address is computed in 64 bits from a value below 2^64 and an offset
// of a few GiB at most, so a wrap shows as the sum moving the wrong way.
inline bool OffsetAddress(uint64_t base, int64_t offset, uint64_t mask,
                          uint64_t* out) {
  const uint64_t sum = base + static_cast<uint64_t>(offset);
  if (offset >= 0 ? sum < base : sum > base) return false;
  if ((sum & ~mask) != 0) return false;
  *out = sum;
  return true;
}

// "Saved at CFA + offset" (DW_CFA_offset and friends): the word at that
// address, read with `read(addr, &value)` (false: unreadable). False when
// the address is invalid (OffsetAddress) or the word cannot be read.
//
// Recovery is lazy (gdb, libunwind and framehop do the same): when this
// fails for a callee-saved register, the caller's register is unknown, not
// an error, since the row may describe a save slot that is already gone (an
// epilogue popped it; it lies below a sample's stack copy, which starts at
// sp). Only a return address or a CFA that needs such a value stops the
// walk, and that is a memory error.
template <typename ReadWord>
inline bool ReadSavedAt(uint64_t cfa, int64_t offset, uint64_t mask,
                        ReadWord&& read, uint64_t* value) {
  uint64_t addr;
  return OffsetAddress(cfa, offset, mask, &addr) && read(addr, value);
}

// What "saved at CFA + offset" gives for a callee-saved register.
enum class Saved : uint8_t {
  kRead,      // *value is the word read from the slot
  kRestored,  // the caller's value is the register's current one
  kUnknown,   // the slot cannot be read: the caller's register is unknown
};

// The epilogue rule. At a frame whose PC is where the thread actually was
// (frame 0, or the frame a signal interrupted), a save slot that lies below
// the frame's SP has already been popped: `pop %rbx`, `leave` and `pop
// %rbp`, aarch64's `ldp x29, x30, [sp], #16` restore the register and move
// SP past its slot in the same instruction, and the CFI row still names the
// slot until the `ret`. The register already holds the caller's value, so
// it is kept (framehop reaches the same value by recognising epilogues).
// This matters where the slot is gone (a profiler's stack copy starts at
// SP); in a live process the popped slot holds the same value. No ABI of
// ours saves a callee-saved register below SP in a frame that keeps it
// there (x86_64's red zone is for leaf data: GCC and clang push
// callee-saved registers), so nothing correct is read past.
//
// `restored_below`: frame 0's (or the interrupted frame's) SP; 0 for every
// other frame, whose slots all lie at or above its SP.
template <typename ReadWord>
inline Saved ReadCalleeSaved(uint64_t cfa, int64_t offset, uint64_t mask,
                             uint64_t restored_below, ReadWord&& read,
                             uint64_t* value) {
  uint64_t addr;
  if (!OffsetAddress(cfa, offset, mask, &addr)) return Saved::kUnknown;
  if (addr < restored_below) return Saved::kRestored;
  return read(addr, value) ? Saved::kRead : Saved::kUnknown;
}

}  // namespace unwindd::unwinder::rules

#endif  // UNWINDD_UNWINDER_CFI_RULES_H_
