// The byte budget every module of one ModuleCache draws on for its row
// cache, so that the rows cached across all modules stay bounded (the
// server's `--row-cache-bytes`), not just the rows of one module.
//
//   auto budget = std::make_shared<RowBudget>(64 << 20);
//   budget->Register(module);           // ModuleCache does this
//   if (!budget->TryTake(n)) budget->ReclaimAll();   // outside module locks
//
// When a module finds the budget spent, every registered module drops its
// cached rows (ReclaimAll) and caching starts afresh: crude, but it cannot
// starve the module that is in use now behind rows of one that no longer
// is. Thread-safe; shared by the modules, so it outlives the cache.
#ifndef UNWINDD_UNWINDER_ROW_BUDGET_H_
#define UNWINDD_UNWINDER_ROW_BUDGET_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace unwindd::unwinder {

class Module;

class RowBudget {
 public:
  explicit RowBudget(uint64_t max_bytes) : max_(max_bytes) {}

  // Takes `n` bytes if they fit under the budget.
  bool TryTake(uint64_t n) {
    uint64_t used = used_.load(std::memory_order_relaxed);
    do {
      if (n > max_ || used > max_ - n) return false;
    } while (!used_.compare_exchange_weak(used, used + n, std::memory_order_relaxed));
    return true;
  }
  void Give(uint64_t n) { used_.fetch_sub(n, std::memory_order_relaxed); }

  // Modules whose rows ReclaimAll drops. Must not be called with any
  // module's lock held.
  void Register(const std::shared_ptr<Module>& module);
  void ReclaimAll();

  uint64_t used() const { return used_.load(std::memory_order_relaxed); }
  uint64_t max() const { return max_; }

 private:
  const uint64_t max_;
  std::atomic<uint64_t> used_{0};
  std::mutex mu_;  // taken before any module's lock, never after
  std::vector<std::weak_ptr<Module>> modules_;
};

}  // namespace unwindd::unwinder

#endif  // UNWINDD_UNWINDER_ROW_BUDGET_H_
