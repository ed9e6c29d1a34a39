#include "unwinder/module_cache.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <utility>

#include "absl/hash/hash.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_format.h"
#include "memory/scoped_fd.h"

namespace unwindd::unwinder {

ModuleCache::ModuleCache(uint64_t max_bytes, uint64_t max_row_bytes)
    : max_bytes_(max_bytes), row_budget_(std::make_shared<RowBudget>(max_row_bytes)) {}

std::shared_ptr<Module> ModuleCache::Lookup(const std::string& key) {
  auto it = entries_.find(key);
  if (it != entries_.end() && it->second.module->changed()) {
    // Its file was truncated under it (memory/file_mapping.h): a fresh
    // open, not this module, answers from now on.
    Evict(it);
    it = entries_.end();
  }
  if (it == entries_.end()) {
    ++stats_.misses;
    return nullptr;
  }
  ++stats_.hits;
  it->second.last_use = ++tick_;
  return it->second.module;
}

void ModuleCache::Evict(absl::flat_hash_map<std::string, Entry>::iterator it) {
  // Another key may hold the same module (one image, two files): then the
  // module stays, its bytes stay counted, and its build-id points there.
  const std::string* other = nullptr;
  for (const auto& [key, e] : entries_) {
    if (key != it->first && e.module == it->second.module) other = &key;
  }
  auto b = by_build_id_.find(it->second.build_id_key);
  if (b != by_build_id_.end() && b->second == it->first) {
    if (other != nullptr) {
      b->second = *other;
    } else {
      by_build_id_.erase(b);
    }
  }
  if (other == nullptr) stats_.bytes -= it->second.module->image_size();
  entries_.erase(it);
  ++stats_.evictions;
  stats_.modules = entries_.size();
}

std::shared_ptr<Module> ModuleCache::Insert(const std::string& key,
                                            std::shared_ptr<Module> module,
                                            const std::string& flavor) {
  const std::string id_key =
      module->build_id().empty() ? "" : absl::StrCat(flavor, module->build_id());
  if (!id_key.empty()) {
    auto b = by_build_id_.find(id_key);
    if (b != by_build_id_.end()) {
      auto existing = entries_.find(b->second);
      // Not one whose file changed under it: the new file replaces it.
      if (existing != entries_.end() && !existing->second.module->changed()) {
        std::shared_ptr<Module> same = existing->second.module;
        existing->second.last_use = ++tick_;
        entries_[key] = Entry{same, tick_, id_key};
        stats_.modules = entries_.size();
        return same;
      }
    }
  }
  module->set_row_budget(row_budget_);
  row_budget_->Register(module);
  uint64_t size = module->image_size();
  // A module larger than the whole budget is still returned, just not kept
  // (and pushes nothing out).
  if (size > max_bytes_) return module;
  // Evict least recently used entries until the new one fits.
  while (!entries_.empty() && stats_.bytes + size > max_bytes_) {
    auto oldest = entries_.begin();
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->second.last_use < oldest->second.last_use) oldest = it;
    }
    Evict(oldest);
  }
  stats_.bytes += size;
  if (!id_key.empty()) by_build_id_[id_key] = key;
  entries_[key] = Entry{module, ++tick_, id_key};
  stats_.modules = entries_.size();
  return module;
}

void ModuleCache::ForgetIfRewritten(const std::string& inode, const std::string& stamp) {
  auto [it, inserted] = stamps_.try_emplace(inode, stamp);
  if (inserted || it->second == stamp) {
    // Bounded: stamps of evicted files are forgotten in bulk (a forgotten
    // inode only loses the early eviction below; its key still differs).
    if (inserted && stamps_.size() > 4 * entries_.size() + 1024) {
      stamps_.clear();
      stamps_.emplace(inode, stamp);
    }
    return;
  }
  // The same inode with other contents: every module of its old contents
  // maps the new bytes now (a private mapping shares the page cache until
  // written), so none may answer again, here or for whoever holds one.
  it->second = stamp;
  std::vector<std::string> stale;
  for (const auto& [key, e] : entries_) {
    if (absl::StartsWith(key, inode)) stale.push_back(key);
  }
  for (const std::string& key : stale) {
    auto e = entries_.find(key);
    if (e == entries_.end()) continue;
    e->second.module->MarkChanged();
    Evict(e);
  }
}

std::shared_ptr<Module> ModuleCache::FindByBuildId(const std::string& build_id) {
  absl::MutexLock lock(&mu_);
  auto b = by_build_id_.find(build_id);
  if (b == by_build_id_.end()) return nullptr;
  return Lookup(b->second);
}

std::shared_ptr<Module> ModuleCache::FindAnyByBuildId(const std::string& build_id) {
  if (build_id.empty()) return nullptr;
  absl::MutexLock lock(&mu_);
  for (auto& [key, entry] : entries_) {
    if (entry.module->build_id() == build_id && !entry.module->changed()) {
      entry.last_use = ++tick_;
      return entry.module;
    }
  }
  return nullptr;
}

absl::StatusOr<std::shared_ptr<Module>> ModuleCache::GetFile(const std::string& path,
                                                            const DebugLookup* debug) {
  // Opened, not just stat'ed, even when the module is cached: the caller
  // must be able to read the file (the server runs each core request with
  // the client's filesystem identity), and a module cached for another
  // caller must not answer for one who may only see the file's name. The
  // key comes from the file we opened, not from whatever the path names by
  // the time we look.
  memory::ScopedFd fd = memory::OpenCloexec(path.c_str(), O_RDONLY | O_NONBLOCK);
  struct stat st;
  if (!fd.valid() || fstat(fd.get(), &st) != 0) {
    // Let Module::OpenFile produce the right error for the path.
    return Module::OpenFile(path);
  }
  // The inode, then what changes when its contents do: size, mtime and
  // ctime (which a rewrite in place moves even within one clock tick since
  // Linux 6.13's multigrain timestamps, once someone has looked at them).
  const std::string inode = absl::StrFormat("file:%u:%u:", st.st_dev, st.st_ino);
  const std::string stamp =
      absl::StrFormat("%d:%d.%09d:%d.%09d", st.st_size, st.st_mtim.tv_sec,
                      st.st_mtim.tv_nsec, st.st_ctim.tv_sec, st.st_ctim.tv_nsec);
  const std::string flavor =
      debug != nullptr && debug->options != nullptr ? DebugFlavor(*debug) : "";
  const std::string key = absl::StrCat(inode, stamp, flavor);
  std::shared_ptr<Module> cached;
  {
    absl::MutexLock lock(&mu_);
    ForgetIfRewritten(inode, stamp);
    cached = Lookup(key);
  }
  if (cached != nullptr) {
    // The debug file a cached module found is opened again as this caller,
    // like the file itself above; one they may not read is not used for
    // them (they get the module without it).
    std::optional<DebugInfo> info = flavor.empty() ? std::nullopt : cached->debug_info();
    if (info && !info->fetched && !info->path.empty()) {
      memory::ScopedFd dfd = memory::OpenCloexec(info->path.c_str(), O_RDONLY | O_NONBLOCK);
      if (!dfd.valid()) return GetFile(path);
    }
    return cached;
  }
  // Opened outside the lock: two racing opens of one file both succeed and
  // the second insert replaces the first, which is harmless. From the file
  // the key was made of (no second open of the path).
  absl::StatusOr<std::shared_ptr<Module>> m = Module::OpenFd(fd.release(), st, path);
  if (!m.ok()) return m;
  if (!flavor.empty()) {
    (*m)->set_debug_info_loader(
        MakeDebugInfoLoader(path, debug->recorded_path, *debug->options));
  }
  absl::MutexLock lock(&mu_);
  return Insert(key, *std::move(m), flavor);
}

std::string ModuleCache::DebugFlavor(const DebugLookup& debug) {
  const locate::LocateOptions& o = *debug.options;
  std::string dir = debug.recorded_path.substr(0, debug.recorded_path.rfind('/') + 1);
  return absl::StrCat(
      "|debug:", absl::StrJoin(locate::EffectiveDebugDirs(o), ":"), "|",
      o.debuginfod != nullptr ? o.debuginfod->urls() : "-", "|", dir);
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
  return Insert(key, *std::move(m));
}

ModuleCache::Stats ModuleCache::stats() const {
  absl::MutexLock lock(&mu_);
  Stats s = stats_;
  s.row_bytes = row_budget_->used();
  return s;
}

}  // namespace unwindd::unwinder
