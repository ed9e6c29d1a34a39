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
// Direct-mapped, allocated on first Put with kInitialEntries slots (one
// 4 KiB page) and grown fourfold whenever more than half its slots are in
// use, up to kEntries (64 KiB); a collision replaces the older entry. A
// one-shot unwind of a few dozen PCs (`unwind pid`) touches a page or
// four instead of sixteen; a stream of samples still gets the whole table. Not thread-safe: an
// AddressSpace is used by one unwind at a time.
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
  static constexpr int kInitialEntries = 64;

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
    if (entries_ == nullptr) Resize(kInitialEntries);
    Entry* e = &entries_[Slot(key)];
    if (e->module < 0) {
      if (used_ + 1 > size_ / 2 && size_ < kEntries) {
        Resize(size_ * 4);
        e = &entries_[Slot(key)];
      }
      if (e->module < 0) ++used_;
    }
    *e = Entry{key, module, method, row};
  }

  size_t bytes() const { return static_cast<size_t>(size_) * sizeof(Entry); }

 private:
  size_t Slot(const RowKey& key) const {
    // Return addresses of one module are close together; the multiply
    // spreads their low bits over the table (its top bits index it).
    return ((key.address * 0x9e3779b97f4a7c15ull) >> shift_ ^
            (key.return_address ? 0 : 1)) &
           (size_ - 1);
  }

  // A table of `size` slots (a power of two) holding what fits of the old.
  void Resize(int size) {
    std::unique_ptr<Entry[]> old = std::move(entries_);
    const int old_size = size_;
    entries_ = std::make_unique<Entry[]>(size);
    size_ = size;
    shift_ = 64 - __builtin_ctz(static_cast<unsigned>(size));
    used_ = 0;
    for (int i = 0; i < old_size; ++i) {
      if (old[i].module < 0) continue;
      Entry& e = entries_[Slot(old[i].key)];
      if (e.module < 0) ++used_;
      e = old[i];
    }
  }

  std::unique_ptr<Entry[]> entries_;
  int size_ = 0;
  int shift_ = 64;
  int used_ = 0;  // slots holding an entry
};

}  // namespace unwindd::unwinder

#endif  // UNWINDD_UNWINDER_STEP_CACHE_H_
