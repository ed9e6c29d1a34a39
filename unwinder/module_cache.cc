#include "unwinder/module_cache.h"

#include <sys/stat.h>

#include <utility>

#include "absl/hash/hash.h"
#include "absl/strings/str_format.h"

namespace unwindd::unwinder {

ModuleCache::ModuleCache(uint64_t max_bytes) : max_bytes_(max_bytes) {}

std::shared_ptr<Module> ModuleCache::Lookup(const std::string& key) {
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    ++stats_.misses;
    return nullptr;
  }
  ++stats_.hits;
  it->second.last_use = ++tick_;
  return it->second.module;
}

void ModuleCache::Insert(const std::string& key, std::shared_ptr<Module> module) {
  uint64_t size = module->image_size();
  // Evict least recently used entries until the new one fits. A module
  // larger than the whole budget is still returned, just not kept.
  while (!entries_.empty() && stats_.bytes + size > max_bytes_) {
    auto oldest = entries_.begin();
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->second.last_use < oldest->second.last_use) oldest = it;
    }
    stats_.bytes -= oldest->second.module->image_size();
    entries_.erase(oldest);
    ++stats_.evictions;
  }
  if (size > max_bytes_) return;
  stats_.bytes += size;
  entries_[key] = Entry{std::move(module), ++tick_};
  stats_.modules = entries_.size();
}

absl::StatusOr<std::shared_ptr<Module>> ModuleCache::GetFile(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    // Let Module::OpenFile produce the right error for the path.
    return Module::OpenFile(path);
  }
  std::string key = absl::StrFormat("file:%u:%u:%d:%d.%09d", st.st_dev, st.st_ino,
                                    st.st_size, st.st_mtim.tv_sec,
                                    st.st_mtim.tv_nsec);
  {
    absl::MutexLock lock(&mu_);
    if (std::shared_ptr<Module> m = Lookup(key)) return m;
  }
  // Opened outside the lock: two racing opens of one file both succeed and
  // the second insert replaces the first, which is harmless.
  absl::StatusOr<std::shared_ptr<Module>> m = Module::OpenFile(path);
  if (!m.ok()) return m;
  absl::MutexLock lock(&mu_);
  Insert(key, *m);
  return m;
}

absl::StatusOr<std::shared_ptr<Module>> ModuleCache::GetImage(
    std::vector<uint8_t> image, std::string name) {
  std::string key = absl::StrFormat(
      "image:%u:%x", image.size(),
      absl::HashOf(std::string_view(reinterpret_cast<const char*>(image.data()),
                                    image.size())));
  {
    absl::MutexLock lock(&mu_);
    if (std::shared_ptr<Module> m = Lookup(key)) return m;
  }
  absl::StatusOr<std::shared_ptr<Module>> m =
      Module::FromImage(std::move(image), std::move(name));
  if (!m.ok()) return m;
  absl::MutexLock lock(&mu_);
  Insert(key, *m);
  return m;
}

ModuleCache::Stats ModuleCache::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

}  // namespace unwindd::unwinder
