// Modules opened once and shared by every target and request: files keyed by
// their identity on disk (device, inode, size, mtime, ctime — the same file reached
// through /proc/PID/map_files or /proc/PID/root is one entry), in-memory
// images (the vDSO) by content, and both by build-id: a file that is another
// copy of an image already cached (a container's library, a moved binary)
// shares that module and its warm row cache. Bounded by a byte budget (file
// image sizes), least recently used evicted first; evicted modules stay alive
// for whoever still holds them. A file found changed under its module (a
// read past its new end, or its inode seen again with another size or
// time) is evicted, and the module answers no more lookups for anyone.
//
//   ModuleCache cache(/*max_bytes=*/1 << 30);
//   absl::StatusOr<std::shared_ptr<Module>> m = cache.GetFile("/usr/lib/...");
//
// With a DebugLookup, a module also finds its separate debug information
// when its own CFI misses a PC (debug_info.h). Such modules are cached
// under a key that says how they look (debug directories, sysroot,
// debuginfod), apart from modules opened without one, and a cached
// module's local debug file is opened again as the caller on each hit, as
// the file itself is.
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
#include "unwinder/locate/locator.h"
#include "unwinder/module.h"
#include "unwinder/row_budget.h"

namespace unwindd::unwinder {

class ModuleCache {
 public:
  // `max_bytes` bounds the cached modules' file images (mapped, not heap);
  // `max_row_bytes` the rows their row caches hold, together (heap).
  // `max_row_bytes` 0: no row is cached (a command that walks each thread
  // once; the step cache still serves a PC met again).
  explicit ModuleCache(uint64_t max_bytes = kDefaultMaxBytes,
                       uint64_t max_row_bytes = kDefaultMaxRowBytes);
  static constexpr uint64_t kDefaultMaxBytes = uint64_t{4} << 30;
  static constexpr uint64_t kDefaultMaxRowBytes = uint64_t{256} << 20;

  // Where and how to look for a module's separate debug information.
  struct DebugLookup {
    // Not owned; must outlive the cached modules (their loaders copy it,
    // but not what options.debuginfod points to).
    const locate::LocateOptions* options = nullptr;
    // The path the target recorded for the file (.gnu_debuglink's
    // debug-directory lookup uses its directory).
    std::string recorded_path;
  };

  absl::StatusOr<std::shared_ptr<Module>> GetFile(const std::string& path,
                                                  const DebugLookup* debug = nullptr);
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
  // The same, whichever way the module looks for debug information
  // (GetFile's `debug`): every entry is looked at, so this is for a
  // one-shot command's few modules, not a server's many.
  std::shared_ptr<Module> FindAnyByBuildId(const std::string& build_id);

 private:
  struct Entry {
    std::shared_ptr<Module> module;
    uint64_t last_use = 0;
    std::string build_id_key;  // its key in by_build_id_, "" if none
  };
  std::shared_ptr<Module> Lookup(const std::string& key)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Caches `module` under `key`, unless a module with the same build-id is
  // cached already: then that one is cached under `key` too and returned.
  // `flavor` keeps modules that look for debug information apart (in
  // by_build_id_ too) from those that do not.
  std::shared_ptr<Module> Insert(const std::string& key,
                                 std::shared_ptr<Module> module,
                                 const std::string& flavor = "")
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Evict(absl::flat_hash_map<std::string, Entry>::iterator it)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // When `inode` ("file:DEV:INO:") was last seen with another `stamp`
  // (size, mtime, ctime), its modules are marked changed and evicted.
  void ForgetIfRewritten(const std::string& inode, const std::string& stamp)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The part of a key that says how a module looks for debug information.
  static std::string DebugFlavor(const DebugLookup& debug);

  const uint64_t max_bytes_;
  const std::shared_ptr<RowBudget> row_budget_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
  // [flavor] build-id -> the key of an entry holding that module.
  absl::flat_hash_map<std::string, std::string> by_build_id_ ABSL_GUARDED_BY(mu_);
  // "file:DEV:INO:" -> the stamp it was last opened with.
  absl::flat_hash_map<std::string, std::string> stamps_ ABSL_GUARDED_BY(mu_);
  uint64_t tick_ ABSL_GUARDED_BY(mu_) = 0;
  Stats stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace unwindd::unwinder

#endif  // UNWINDD_UNWINDER_MODULE_CACHE_H_
