// Per-PC memo of the step loop for one address space: for a frame address
// (target address space) whose module's code is not a sigreturn trampoline and
// whose unwind row is a CompactRow, the module and the row. A warm step is
// then one probe of this table instead of the module search, the
// trampoline check, the module's locked row cache and the general row
// interpreter.
//
//   StepCache cache;
//   if (const StepCache::Entry* e = cache.Find(frame, policy)) ...
//   cache.Put(frame, policy, module_index, method, compact_row);
//
// Direct-mapped and fixed-size (kEntries * sizeof(Entry), 64 KiB, allocated
// on first Put): a collision replaces the older entry. Not thread-safe: an
// AddressSpace is used by one unwind at a time.
#ifndef UNWINDD_UNWINDER_STEP_CACHE_H_
#define UNWINDD_UNWINDER_STEP_CACHE_H_

#include <cstdint>
#include <memory>

#include "arch/frame_address.h"
#include "unwinder/cfi/compact_row.h"
#include "unwinder/method.h"

namespace unwindd::unwinder {

class StepCache {
 public:
  static constexpr int kEntries = 1024;

  struct Entry {
    uint64_t address = 0;  // FrameAddress::address()
    int32_t module = -1;   // index into AddressSpace::modules(); -1: empty
    uint16_t policy = 0;   // SourcePolicy::Code()
    bool return_address = false;
    Method method = Method::kEhFrame;
    CompactRow row;
  };

  const Entry* Find(arch::FrameAddress at, uint16_t policy) const {
    if (entries_ == nullptr) return nullptr;
    const Entry& e = entries_[Slot(at)];
    return e.module >= 0 && e.address == at.address() &&
                   e.return_address == at.is_return_address() && e.policy == policy
               ? &e
               : nullptr;
  }

  void Put(arch::FrameAddress at, uint16_t policy, int module, Method method,
           const CompactRow& row) {
    if (entries_ == nullptr) entries_ = std::make_unique<Entry[]>(kEntries);
    entries_[Slot(at)] =
        Entry{at.address(), module, policy, at.is_return_address(), method, row};
  }

  size_t bytes() const { return entries_ == nullptr ? 0 : kEntries * sizeof(Entry); }

 private:
  static size_t Slot(arch::FrameAddress at) {
    // Return addresses of one module are close together; the multiply
    // spreads their low bits over the table.
    return ((at.address() * 0x9e3779b97f4a7c15ull) >> 54 ^
            (at.is_return_address() ? 0 : 1)) &
           (kEntries - 1);
  }

  std::unique_ptr<Entry[]> entries_;
};

}  // namespace unwindd::unwinder

#endif  // UNWINDD_UNWINDER_STEP_CACHE_H_
