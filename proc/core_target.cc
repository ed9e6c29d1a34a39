#include "proc/core_target.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "memory/factories.h"
#include "memory/file_region_memory.h"
#include "proc/core_elf.h"

namespace unwindd::proc {
namespace {

// Files read for their build-id when a module must be found by it.
constexpr size_t kMaxIndexedFiles = 8192;

}  // namespace

absl::StatusOr<std::unique_ptr<CoreTarget>> OpenCore(
    const std::string& path, const CoreOptions& options) {
  std::unique_ptr<CoreTarget> t(new CoreTarget());
  absl::Status s = t->Init(path, options);
  if (!s.ok()) return s;
  return t;
}

absl::Status CoreTarget::Init(const std::string& path,
                              const CoreOptions& options) {
  options_ = options;
  report_.core_path = path;
  absl::StatusOr<memory::OpenedFile> opened =
      memory::OpenMaybeDecompressed(path, options.decompress);
  if (!opened.ok()) return opened.status();
  report_.compression = opened->compression;
  auto fd = std::make_shared<const memory::ScopedFd>(std::move(opened->fd));
  absl::StatusOr<CoreFile> core = CoreFile::Read(fd, opened->size, path);
  if (!core.ok()) return core.status();
  core_.emplace(*std::move(core));
  report_.warnings = core_->warnings();

  // What the core itself holds: discovery and build-ids come from here only.
  std::vector<memory::FileRegion> core_regions;
  for (const CoreSegment& seg : core_->segments()) {
    core_regions.push_back({seg.vaddr, seg.in_file, fd, seg.offset});
  }
  absl::StatusOr<std::unique_ptr<memory::Memory>> dumped =
      memory::CreateFileRegionMemory(core_regions);
  if (!dumped.ok()) return dumped.status();

  FileHeaderReader file_headers = [this](
                                      const std::string& recorded,
                                      bool is_exe) -> absl::StatusOr<ElfImage> {
    for (const std::string& c :
         CandidatePaths(options_.lookup, recorded, is_exe)) {
      std::optional<OpenedCandidate> f = OpenCandidate(c);
      if (!f) continue;
      return ReadElfImage(*f->as_memory, 0, ElfView::kFile);
    }
    return absl::NotFoundError(absl::StrCat(recorded, " not found"));
  };
  BuildIdFinder by_build_id = [this](const std::string& id) {
    return FindByBuildId(id);
  };
  DiscoveredModules found =
      DiscoverModules(*core_, **dumped, file_headers, by_build_id);
  mappings_ = std::move(found.mappings);
  report_.modules_from = found.source;
  report_.executable = found.main_executable;
  for (std::string& w : found.warnings)
    report_.warnings.push_back(std::move(w));
  if (!options.proc_maps.empty() && !core_->nt_file()) UseProcMaps(options);

  // The build-id of each file as the core's dumped ELF headers record it:
  // the mapping at file offset 0 starts with the ELF header.
  for (const Mapping& m : mappings_) {
    if (!NamesFile(m) || m.offset != 0 ||
        recorded_build_ids_.contains(m.path)) {
      continue;
    }
    absl::StatusOr<ElfImage> img =
        ReadElfImage(**dumped, m.start, ElfView::kLoaded);
    if (!img.ok()) continue;
    absl::StatusOr<std::string> id =
        ReadBuildId(**dumped, *img, ElfView::kLoaded);
    if (id.ok()) recorded_build_ids_[m.path] = *id;
  }

  // The files back what the core did not dump; the core's own bytes
  // (listed first) win wherever both exist.
  std::vector<memory::FileRegion> regions = std::move(core_regions);
  ResolvedFiles files = ResolveRecordedFiles(
      mappings_, recorded_build_ids_, options_.lookup, report_.executable);
  report_.files = std::move(files.files);
  file_index_ = std::move(files.index);
  for (std::string& w : files.warnings) report_.warnings.push_back(std::move(w));
  regions.insert(regions.end(), files.regions.begin(), files.regions.end());
  absl::StatusOr<std::unique_ptr<memory::Memory>> all =
      memory::CreateFileRegionMemory(std::move(regions));
  if (!all.ok()) return all.status();
  memory_ = memory::CreateCachedMemory(*std::move(all));

  for (size_t i = 0; i < core_->threads().size(); ++i) {
    thread_index_.emplace(core_->threads()[i].tid, i);
  }
  // The main thread first (Target::Threads), then the core's note order.
  report_.pid = core_->prpsinfo() ? core_->prpsinfo()->pid : 0;
  if (report_.pid == 0) {
    report_.pid = core_->threads().front().tid;
    for (const CoreThread& t : core_->threads())
      report_.pid = std::min(report_.pid, t.tid);
  }
  for (const CoreThread& t : core_->threads()) {
    if (t.tid == report_.pid) threads_.push_back(t.tid);
  }
  for (const CoreThread& t : core_->threads()) {
    if (t.tid != report_.pid) threads_.push_back(t.tid);
  }
  if (!options.tids.empty()) {
    std::vector<pid_t> wanted;
    for (pid_t tid : options.tids) {
      if (std::find(threads_.begin(), threads_.end(), tid) == threads_.end()) {
        return absl::NotFoundError(
            absl::StrFormat("thread %d is not in %s", tid, path));
      }
      if (std::find(wanted.begin(), wanted.end(), tid) == wanted.end()) {
        wanted.push_back(tid);
      }
    }
    threads_ = std::move(wanted);
  }
  return absl::OkStatus();
}

std::string CoreTarget::FindByBuildId(const std::string& build_id) {
  if (!build_id_index_built_) {
    build_id_index_built_ = true;
    // The shared objects in the library directories of the sysroot (or of
    // this machine), by build-id; bounded, since each costs two reads.
    std::string root = options_.lookup.sysroot;
    while (!root.empty() && root.back() == '/') root.pop_back();
    size_t files = 0;
    for (const std::string& dir : LibraryDirs()) {
      DIR* d = opendir((root + dir).c_str());
      if (d == nullptr) continue;
      while (struct dirent* e = readdir(d)) {
        if (files >= kMaxIndexedFiles) break;
        if (!absl::StrContains(e->d_name, ".so")) continue;
        ++files;
        const std::string recorded = absl::StrCat(dir, "/", e->d_name);
        std::optional<OpenedCandidate> f = OpenCandidate(root + recorded);
        if (!f) continue;
        absl::StatusOr<ElfImage> img =
            ReadElfImage(*f->as_memory, 0, ElfView::kFile);
        if (!img.ok()) continue;
        absl::StatusOr<std::string> id =
            ReadBuildId(*f->as_memory, *img, ElfView::kFile);
        if (id.ok()) build_id_index_.try_emplace(*id, recorded);
      }
      closedir(d);
    }
  }
  auto it = build_id_index_.find(build_id);
  return it == build_id_index_.end() ? "" : it->second;
}

void CoreTarget::UseProcMaps(const CoreOptions& options) {
  // Cores record paths, not inodes; so do these mappings once taken over.
  std::vector<Mapping> maps = options.proc_maps;
  for (Mapping& m : maps) m.inode = m.dev_major = m.dev_minor = 0;
  std::stable_sort(maps.begin(), maps.end(), [](const Mapping& a, const Mapping& b) {
    return a.start < b.start;
  });
  mappings_.clear();
  for (Mapping& m : maps) {
    if (m.end <= m.start || (!mappings_.empty() && m.start < mappings_.back().end)) {
      continue;
    }
    mappings_.push_back(std::move(m));
  }
  report_.modules_from = ModuleSource::kProcMaps;
  report_.warnings.push_back(
      "the core has no NT_FILE note (cut short?): mappings from the given "
      "/proc/PID/maps (COREDUMP_PROC_MAPS)");
  // AT_ENTRY (9, include/uapi/linux/auxvec.h)
  // names the main executable's mapping.
  std::optional<uint64_t> entry = core_->Auxv(9);
  if (!entry) {
    for (const auto& [type, value] : options.auxv) {
      if (type == 9) entry = value;
    }
  }
  for (const Mapping& m : mappings_) {
    if (entry && m.Contains(*entry) && NamesFile(m)) {
      report_.executable = m.path;
      return;
    }
  }
}

absl::StatusOr<arch::RegisterSet> CoreTarget::InitialRegisters(pid_t tid) {
  auto it = thread_index_.find(tid);
  if (it != thread_index_.end()) return core_->threads()[it->second].regs;
  return absl::NotFoundError(
      absl::StrFormat("thread %d is not in %s", tid, report_.core_path));
}

std::vector<std::string> CoreTarget::FileCandidates(const Mapping& m) const {
  if (!NamesFile(m)) return {};
  auto it = file_index_.find(m.path);
  if (it != file_index_.end()) {
    const CoreFileStatus& f = report_.files[it->second];
    if (f.state == CoreFileStatus::State::kFound) return {f.file};
    return f.tried;
  }
  return CandidatePaths(options_.lookup, m.path, m.path == report_.executable);
}

std::optional<SignalInfo> CoreTarget::ThreadSignal(pid_t tid) const {
  auto it = thread_index_.find(tid);
  if (it == thread_index_.end()) return std::nullopt;
  return core_->threads()[it->second].signal;
}

std::string CoreTarget::RecordedBuildId(const Mapping& m) const {
  auto it = recorded_build_ids_.find(m.path);
  return it == recorded_build_ids_.end() ? "" : it->second;
}

}  // namespace unwindd::proc
