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

// A mapping whose file the core names: a recorded path (inode 0, since
// cores do not record inodes), not "[vdso]" or an anonymous mapping.
bool NamesFile(const Mapping& m) { return !m.path.empty() && m.path[0] != '['; }

struct OpenedCandidate {
  std::shared_ptr<const memory::ScopedFd> fd;
  std::unique_ptr<memory::Memory> as_memory;  // the file at address 0
  uint64_t size = 0;
};

// A regular file opened read-only and viewed as memory, or nullopt.
std::optional<OpenedCandidate> OpenCandidate(const std::string& path) {
  memory::ScopedFd fd = memory::OpenCloexec(path.c_str(), O_RDONLY);
  if (!fd.valid()) return std::nullopt;
  struct stat st;
  if (fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  OpenedCandidate c;
  c.fd = std::make_shared<memory::ScopedFd>(std::move(fd));
  c.size = static_cast<uint64_t>(st.st_size);
  absl::StatusOr<std::unique_ptr<memory::Memory>> m =
      memory::CreateFileRegionMemory({{0, c.size, c.fd, 0}});
  if (!m.ok()) return std::nullopt;
  c.as_memory = *std::move(m);
  return c;
}

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

  std::vector<memory::FileRegion> regions = std::move(core_regions);
  ResolveFiles(regions);
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

void CoreTarget::ResolveFiles(std::vector<memory::FileRegion>& regions) {
  absl::flat_hash_map<std::string, size_t>& index = file_index_;
  std::vector<std::shared_ptr<const memory::ScopedFd>> fds;
  for (const Mapping& m : mappings_) {
    if (!NamesFile(m) || index.contains(m.path)) continue;
    index[m.path] = report_.files.size();
    CoreFileStatus st;
    st.recorded = m.path;
    auto id = recorded_build_ids_.find(m.path);
    if (id != recorded_build_ids_.end()) st.core_build_id = id->second;
    st.tried =
        CandidatePaths(options_.lookup, m.path, m.path == report_.executable);
    std::shared_ptr<const memory::ScopedFd> chosen;
    for (const std::string& c : st.tried) {
      std::optional<OpenedCandidate> f = OpenCandidate(c);
      if (!f) continue;
      std::string file_id;
      absl::StatusOr<ElfImage> img =
          ReadElfImage(*f->as_memory, 0, ElfView::kFile);
      if (img.ok()) {
        absl::StatusOr<std::string> fid =
            ReadBuildId(*f->as_memory, *img, ElfView::kFile);
        if (fid.ok()) file_id = *fid;
      }
      if (!st.core_build_id.empty() && !file_id.empty() &&
          file_id != st.core_build_id) {
        if (st.state != CoreFileStatus::State::kMismatch) {
          st.state = CoreFileStatus::State::kMismatch;
          st.file = c;
          st.file_build_id = file_id;
        }
        continue;
      }
      st.state = CoreFileStatus::State::kFound;
      st.file = c;
      st.file_build_id = file_id;
      chosen = f->fd;
      break;
    }
    if (st.state == CoreFileStatus::State::kMissing) {
      report_.warnings.push_back(
          absl::StrFormat("%s: not found (tried %s)", st.recorded,
                          absl::StrJoin(st.tried, ", ")));
    } else if (st.state == CoreFileStatus::State::kMismatch) {
      report_.warnings.push_back(absl::StrFormat(
          "%s: %s has build-id %s but the core recorded %s; not used",
          st.recorded, st.file, st.file_build_id, st.core_build_id));
    }
    fds.push_back(chosen);
    report_.files.push_back(std::move(st));
  }
  // The files back what the core did not dump; the core's own bytes
  // (listed first) win wherever both exist.
  for (const Mapping& m : mappings_) {
    if (!NamesFile(m)) continue;
    const std::shared_ptr<const memory::ScopedFd>& fd = fds[index[m.path]];
    if (fd != nullptr)
      regions.push_back({m.start, m.end - m.start, fd, m.offset});
  }
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

absl::string_view CoreFileStateName(CoreFileStatus::State state) {
  switch (state) {
    case CoreFileStatus::State::kFound:
      return "found";
    case CoreFileStatus::State::kMissing:
      return "missing";
    case CoreFileStatus::State::kMismatch:
      return "mismatch";
  }
  return "unknown";
}

}  // namespace unwindd::proc
