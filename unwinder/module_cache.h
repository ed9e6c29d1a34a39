// Modules opened once and shared by every target and request: files keyed by
// their identity on disk (device, inode, size, mtime — the same file reached
// through /proc/PID/map_files or /proc/PID/root is one entry), in-memory
// images (the vDSO) by content, and both by build-id: a file that is another
// copy of an image already cached (a container's library, a moved binary)
// shares that module and its warm row cache. Bounded by a byte budget (file
// image sizes), least recently used evicted first; evicted modules stay alive
// for whoever still holds them.
//
//   ModuleCache cache(/*max_bytes=*/1 << 30);
//   absl::StatusOr<std::shared_ptr<Module>> m = cache.GetFile("/usr/lib/...");
#ifndef UNWINDD_UNWINDER_MODULE_CACHE_H_
#define UNWINDD_UNWINDER_MODULE_CACHE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "unwinder/module.h"
#include "unwinder/row_budget.h"

namespace unwindd::unwinder {

class ModuleCache {
 public:
  // `max_bytes` bounds the cached modules' file images (mapped, not heap);
  // `max_row_bytes` the rows their row caches hold, together (heap).
  explicit ModuleCache(uint64_t max_bytes = uint64_t{4} << 30,
                       uint64_t max_row_bytes = kDefaultMaxRowBytes);
  static constexpr uint64_t kDefaultMaxRowBytes = uint64_t{256} << 20;

  absl::StatusOr<std::shared_ptr<Module>> GetFile(const std::string& path);
  absl::StatusOr<std::shared_ptr<Module>> GetImage(std::vector<uint8_t> image,
                                                   std::string name);

  struct Stats {
    uint64_t hits = 0;
    uint64_t misses = 0;
    uint64_t evictions = 0;
    uint64_t bytes = 0;
    uint64_t modules = 0;
    uint64_t row_bytes = 0;  // held by the row caches of every module
  };
  Stats stats() const;

  // The cached module with this build-id (lowercase hex), or nullptr.
  std::shared_ptr<Module> FindByBuildId(const std::string& build_id);

 private:
  struct Entry {
    std::shared_ptr<Module> module;
    uint64_t last_use = 0;
  };
  std::shared_ptr<Module> Lookup(const std::string& key)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Caches `module` under `key`, unless a module with the same build-id is
  // cached already: then that one is cached under `key` too and returned.
  std::shared_ptr<Module> Insert(const std::string& key,
                                 std::shared_ptr<Module> module)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Evict(absl::flat_hash_map<std::string, Entry>::iterator it)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const uint64_t max_bytes_;
  const std::shared_ptr<RowBudget> row_budget_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
  // build-id -> the key of an entry holding that module.
  absl::flat_hash_map<std::string, std::string> by_build_id_ ABSL_GUARDED_BY(mu_);
  uint64_t tick_ ABSL_GUARDED_BY(mu_) = 0;
  Stats stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace unwindd::unwinder

#endif  // UNWINDD_UNWINDER_MODULE_CACHE_H_
