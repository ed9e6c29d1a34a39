#include "unwinder/row_budget.h"

#include <algorithm>

#include "unwinder/module.h"

namespace unwindd::unwinder {

void RowBudget::Register(const std::shared_ptr<Module>& module) {
  std::lock_guard<std::mutex> lock(mu_);
  // Forget modules that are gone, so the list stays as long as the live ones.
  modules_.erase(std::remove_if(modules_.begin(), modules_.end(),
                                [](const std::weak_ptr<Module>& m) { return m.expired(); }),
                 modules_.end());
  modules_.push_back(module);
}

void RowBudget::ReclaimAll() {
  std::lock_guard<std::mutex> lock(mu_);
  for (const std::weak_ptr<Module>& weak : modules_) {
    if (std::shared_ptr<Module> m = weak.lock()) m->DropCachedRows();
  }
}

}  // namespace unwindd::unwinder
