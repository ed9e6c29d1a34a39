// Per-PC memo of the step loop for one address space: for a frame address
// (target address space) whose module's code is not a sigreturn trampoline and
// whose unwind row is a CompactRow, the module and the row. A warm step is
// then one probe of this table instead of the module search, the
// trampoline check, the module's locked row cache and the general row
// interpreter.
//
//   StepCache cache;
//   const RowKey key(frame, policy.Code());
//   if (const StepCache::Entry* e = cache.Find(key)) ...
//   cache.Put(key, module_index, method, compact_row);
//
// Direct-mapped: a collision replaces the older entry. It starts small
// (kSmallEntries, ~9 KiB, allocated on the first Put), which is all a
// one-shot unwind of a process (`unwind pid`: a few dozen distinct PCs)
// touches; after kSmallEntries / 2 Puts it moves, once, to its full size
// (kEntries, 72 KiB), which a profiler's address space then keeps. (A
// table that grew fourfold each time it was half full was tried: its
// intermediate sizes made BM_WarmUnwind's steps miss several times more
// often, 33-38 against 18-22 ns per frame. Allocating the full table for
// every unwind cost `unwind pid` 18 page faults to zero 72 KiB it never
// used.) Not thread-safe: an AddressSpace is used by one unwind at a time.
#ifndef UNWINDD_UNWINDER_STEP_CACHE_H_
#define UNWINDD_UNWINDER_STEP_CACHE_H_

#include <cstdint>
#include <memory>

#include "unwinder/cfi/compact_row.h"
#include "unwinder/method.h"
#include "unwinder/row_key.h"

namespace unwindd::unwinder {

class StepCache {
 public:
  static constexpr int kEntries = 1024;
  static constexpr int kSmallEntries = 128;

  struct Entry {
    RowKey key;            // target address space
    int32_t module = -1;   // index into AddressSpace::modules(); -1: empty
    Method method = Method::kEhFrame;
    CompactRow row;
  };

  const Entry* Find(const RowKey& key) const {
    if (entries_ == nullptr) return nullptr;
    const Entry& e = entries_[Slot(key)];
    return e.module >= 0 && e.key == key ? &e : nullptr;
  }

  void Put(const RowKey& key, int module, Method method, const CompactRow& row) {
    if (entries_ == nullptr) Resize(kSmallEntries);
    if (size_ == kSmallEntries && ++puts_ == kSmallEntries / 2) {
      Resize(kEntries);  // its entries are dropped: they come back warm
    }
    entries_[Slot(key)] = Entry{key, module, method, row};
  }

  size_t bytes() const { return entries_ == nullptr ? 0 : size_ * sizeof(Entry); }

 private:
  void Resize(int entries) {
    entries_ = std::make_unique<Entry[]>(entries);
    size_ = entries;
    shift_ = entries == kEntries ? 54 : 57;  // 64 - log2(entries)
  }

  size_t Slot(const RowKey& key) const {
    // Return addresses of one module are close together; the multiply
    // spreads their low bits over the table (its top bits index it).
    return (((key.address * 0x9e3779b97f4a7c15ull) >> shift_) ^ (key.return_address ? 0 : 1)) &
           (size_ - 1);
  }

  std::unique_ptr<Entry[]> entries_;
  int size_ = 0;
  int shift_ = 0;
  int puts_ = 0;  // into the small table
};

}  // namespace unwindd::unwinder

#endif  // UNWINDD_UNWINDER_STEP_CACHE_H_
