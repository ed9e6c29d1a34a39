// Per-PC memo of the step loop for one address space: for a lookup PC
// (target address) whose module's code is not a sigreturn trampoline and
// whose unwind row is a CompactRow, the module and the row. A warm step is
// then one probe of this table instead of the module search, the
// trampoline check, the module's locked row cache and the general row
// interpreter.
//
//   StepCache cache;
//   if (const StepCache::Entry* e = cache.Find(pc, exact, policy)) ...
//   cache.Put(pc, exact, policy, module_index, method, compact_row);
//
// Direct-mapped and fixed-size (kEntries * sizeof(Entry), 64 KiB, allocated
// on first Put): a collision replaces the older entry. Not thread-safe: an
// AddressSpace is used by one unwind at a time.
#ifndef UNWINDD_UNWINDER_STEP_CACHE_H_
#define UNWINDD_UNWINDER_STEP_CACHE_H_

#include <cstdint>
#include <memory>

#include "unwinder/cfi/compact_row.h"
#include "unwinder/method.h"

namespace unwindd::unwinder {

class StepCache {
 public:
  static constexpr int kEntries = 1024;

  struct Entry {
    uint64_t pc = 0;
    int32_t module = -1;  // index into AddressSpace::modules(); -1: empty
    uint16_t policy = 0;  // SourcePolicy::Code()
    bool exact = false;
    Method method = Method::kEhFrame;
    CompactRow row;
  };

  const Entry* Find(uint64_t pc, bool exact, uint16_t policy) const {
    if (entries_ == nullptr) return nullptr;
    const Entry& e = entries_[Slot(pc, exact)];
    return e.module >= 0 && e.pc == pc && e.exact == exact && e.policy == policy
               ? &e
               : nullptr;
  }

  void Put(uint64_t pc, bool exact, uint16_t policy, int module, Method method,
           const CompactRow& row) {
    if (entries_ == nullptr) entries_ = std::make_unique<Entry[]>(kEntries);
    entries_[Slot(pc, exact)] = Entry{pc, module, policy, exact, method, row};
  }

  size_t bytes() const { return entries_ == nullptr ? 0 : kEntries * sizeof(Entry); }

 private:
  static size_t Slot(uint64_t pc, bool exact) {
    // Return addresses of one module are close together; the multiply
    // spreads their low bits over the table.
    return ((pc * 0x9e3779b97f4a7c15ull) >> 54 ^ (exact ? 1 : 0)) & (kEntries - 1);
  }

  std::unique_ptr<Entry[]> entries_;
};

}  // namespace unwindd::unwinder

#endif  // UNWINDD_UNWINDER_STEP_CACHE_H_
