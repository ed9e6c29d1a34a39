#include "service/server/snapshots.h"

#include <limits.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "memory/factories.h"
#include "proc/maps.h"
#include "proc/snapshot_target_regs.h"

namespace unwindd::service {
namespace {

// Registers in either numbering; more than any arch has is malformed.
constexpr int kMaxRegisterValues = 64;
// NT_GNU_BUILD_ID is usually 20 bytes (SHA-1); allow up to 64 bytes of hex.
constexpr size_t kMaxBuildIdHex = 128;
// Pages of live process memory kept per sample.
constexpr size_t kProcessCachePages = 64;

bool IsLowerHex(absl::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
  });
}

// The sample's path rewrites, then its sysroot.
std::string MapPath(const v1::SnapshotRequest& r, const std::string& path) {
  std::string out = path;
  for (const v1::PathMapping& pm : r.path_map()) {
    if (!pm.from().empty() && absl::StartsWith(path, pm.from())) {
      out = absl::StrCat(pm.to(), path.substr(pm.from().size()));
      break;
    }
  }
  if (!r.sysroot().empty()) out = absl::StrCat(r.sysroot(), out);
  return out;
}

absl::StatusOr<arch::RegisterSet> Registers(const v1::SnapshotRequest& r,
                                            arch::Arch a) {
  if (r.has_perf_registers()) {
    const v1::PerfRegisters& p = r.perf_registers();
    return proc::RegistersFromPerf(
        a, p.mask(), absl::MakeConstSpan(p.values().data(), p.values_size()));
  }
  if (r.has_dwarf_registers()) {
    std::vector<std::pair<uint32_t, uint64_t>> v(
        r.dwarf_registers().values().begin(), r.dwarf_registers().values().end());
    return proc::RegistersFromDwarf(a, v);
  }
  return absl::InvalidArgumentError("the sample has no registers");
}

}  // namespace

void BuildIdIndex::Put(const std::string& build_id, const std::string& path) {
  if (build_id.empty()) return;
  absl::MutexLock l(&mu_);
  // Forgetting everything at the limit is crude but bounded; the entries
  // are re-learned from the next samples that name those build-ids.
  if (paths_.size() >= max_ && !paths_.contains(build_id)) paths_.clear();
  paths_[build_id] = path;
}

std::string BuildIdIndex::Get(const std::string& build_id) const {
  absl::MutexLock l(&mu_);
  auto it = paths_.find(build_id);
  return it == paths_.end() ? "" : it->second;
}

VdsoImage ReadOwnVdso(unwinder::ModuleCache& cache) {
  VdsoImage out;
  const uint64_t base = getauxval(AT_SYSINFO_EHDR);
  if (base == 0) return out;
  absl::StatusOr<std::vector<proc::Mapping>> maps = proc::ReadMaps(getpid());
  if (!maps.ok()) return out;
  for (const proc::Mapping& m : *maps) {
    if (m.path != "[vdso]" || m.start != base || m.end - m.start > (1 << 20)) continue;
    auto bytes = std::make_shared<std::vector<uint8_t>>(m.end - m.start);
    std::memcpy(bytes->data(), reinterpret_cast<const void*>(base), bytes->size());
    absl::StatusOr<std::shared_ptr<unwinder::Module>> mod =
        cache.GetImage(*bytes, "[vdso]");
    if (!mod.ok() || (*mod)->build_id().empty()) return out;
    out.bytes = std::move(bytes);
    out.build_id = (*mod)->build_id();
  }
  return out;
}

absl::Status SnapshotSession::Validate(const v1::SnapshotRequest& r) const {
  if (r.stack().size() > limits_.max_stack_bytes) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "stack copy of %d bytes is over the server's limit of %d",
        r.stack().size(), limits_.max_stack_bytes));
  }
  if (r.mappings_size() > limits_.max_mappings) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "%d mappings is over the server's limit of %d", r.mappings_size(),
        limits_.max_mappings));
  }
  if (r.path_map_size() > limits_.max_path_maps) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "more than %d path_map entries", limits_.max_path_maps));
  }
  if (r.sysroot().size() > PATH_MAX) {
    return absl::InvalidArgumentError("sysroot is longer than PATH_MAX");
  }
  if (r.perf_registers().values_size() > kMaxRegisterValues ||
      r.dwarf_registers().values_size() > kMaxRegisterValues) {
    return absl::InvalidArgumentError("too many register values");
  }
  if (r.pid() < 0 || r.tid() < 0) {
    return absl::InvalidArgumentError("negative pid or tid");
  }
  for (const v1::Mapping& m : r.mappings()) {
    if (m.start() >= m.end()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "mapping [0x%x, 0x%x) is empty", m.start(), m.end()));
    }
    if (m.path().size() > PATH_MAX || m.build_id().size() > kMaxBuildIdHex ||
        !IsLowerHex(m.build_id())) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "mapping at 0x%x: path longer than PATH_MAX or build_id not "
          "lowercase hex of at most %d digits",
          m.start(), kMaxBuildIdHex));
    }
  }
  return absl::OkStatus();
}

std::shared_ptr<const proc::SnapshotFile> SnapshotSession::OpenVerified(
    const std::string& path, const std::string& build_id) {
  if (path.empty()) return nullptr;
  absl::StatusOr<memory::ScopedFd> fd = OpenAsCaller(caller_, path);
  if (!fd.ok()) return nullptr;
  absl::StatusOr<std::shared_ptr<const proc::SnapshotFile>> file =
      proc::SnapshotFile::FromFd(*std::move(fd));
  if (!file.ok()) return nullptr;
  if (build_id.empty()) return *file;
  // Through /proc/self/fd: the module is the file the caller may read.
  absl::StatusOr<std::shared_ptr<unwinder::Module>> module =
      env_.cache->GetFile((*file)->proc_path());
  if (!module.ok() || (*module)->build_id() != build_id) return nullptr;
  index_.Put(build_id, path);
  return *file;
}

std::shared_ptr<const proc::SnapshotFile> SnapshotSession::File(
    const std::string& path, const std::string& build_id) {
  std::string key = absl::StrCat(path, std::string(1, '\0'), build_id);
  auto it = files_.find(key);
  if (it != files_.end()) return it->second;
  std::shared_ptr<const proc::SnapshotFile> file = OpenVerified(path, build_id);
  if (file == nullptr && !build_id.empty()) {
    std::string known = index_.Get(build_id);
    if (!known.empty() && known != path) file = OpenVerified(known, build_id);
  }
  // Bounded: targets built from dropped entries keep their files alive.
  if (static_cast<int>(files_.size()) >= limits_.max_open_files) files_.clear();
  files_.emplace(std::move(key), file);
  return file;
}

absl::StatusOr<std::vector<proc::SnapshotMapping>> SnapshotSession::Mappings(
    const v1::SnapshotRequest& r, bool process_readable) {
  std::vector<proc::SnapshotMapping> out;
  if (r.mappings_size() > 0) {
    out.reserve(r.mappings_size());
    for (const v1::Mapping& pm : r.mappings()) {
      proc::SnapshotMapping sm;
      proc::Mapping& m = sm.mapping;
      m.start = pm.start();
      m.end = pm.end();
      m.offset = pm.offset();
      m.read = pm.read();
      m.write = pm.write();
      m.exec = pm.exec();
      m.path = pm.path();
      sm.build_id = pm.build_id();
      if (!m.path.empty() && m.path[0] == '[') {
        // Without the process, only our own vDSO can stand in for the
        // sample's, and only if the build-id says it is the same image.
        if (m.path == "[vdso]" && !process_readable && !pm.build_id().empty() &&
            pm.build_id() == vdso_.build_id) {
          sm.image = vdso_.bytes;
        }
      } else if (!m.path.empty()) {
        sm.file = File(MapPath(r, m.path), pm.build_id());
      }
      out.push_back(std::move(sm));
    }
  } else if (r.pid() != 0 && r.pid() == last_pid_) {
    return last_mappings_;
  } else if (r.pid() != 0) {
    if (!process_readable) {
      return absl::PermissionDeniedError(absl::StrFormat(
          "the sample has no mappings, and process %d is not one %s may read",
          r.pid(), caller_.Describe()));
    }
    absl::StatusOr<std::vector<proc::Mapping>> maps = proc::ReadMaps(r.pid());
    if (!maps.ok()) return maps.status();
    for (const proc::Mapping& m : *maps) {
      proc::SnapshotMapping sm{m, nullptr, nullptr, ""};
      if (m.IsFileBacked()) {
        sm.file = m.deleted ? nullptr : File(m.path, "");
        if (sm.file == nullptr || sm.file->inode() != m.inode) {
          // Another file at that path now, or another mount namespace: the
          // mapped inode itself. The caller may read the process, so the
          // server may open it on the caller's behalf.
          memory::ScopedFd fd = memory::OpenCloexec(
              absl::StrFormat("/proc/%d/map_files/%x-%x", r.pid(), m.start, m.end)
                  .c_str(),
              O_RDONLY);
          absl::StatusOr<std::shared_ptr<const proc::SnapshotFile>> f =
              fd.valid() ? proc::SnapshotFile::FromFd(std::move(fd))
                         : absl::NotFoundError("");
          sm.file = f.ok() ? *f : nullptr;
        }
      }
      out.push_back(std::move(sm));
    }
  } else {
    return absl::InvalidArgumentError("the sample has neither mappings nor a pid");
  }
  last_pid_ = r.pid();
  last_mappings_ = out;
  return out;
}

bool SnapshotSession::Space::Serves(const v1::SnapshotRequest& r, arch::Arch a,
                                    bool readable) const {
  if (a != arch || r.pid() != pid || readable != process_readable) return false;
  if (r.debuginfod() != debuginfod ||
      r.debug_dirs_size() != static_cast<int>(debug_dirs.size()) ||
      !std::equal(r.debug_dirs().begin(), r.debug_dirs().end(), debug_dirs.begin())) {
    return false;
  }
  // Later samples may omit the table of their pid.
  if (r.mappings_size() == 0) return pid != 0;
  if (r.mappings_size() != static_cast<int>(mappings.size()) ||
      r.sysroot() != sysroot || r.path_map_size() != static_cast<int>(path_map.size())) {
    return false;
  }
  for (int i = 0; i < r.path_map_size(); ++i) {
    if (r.path_map(i).from() != path_map[i].first ||
        r.path_map(i).to() != path_map[i].second) {
      return false;
    }
  }
  for (int i = 0; i < r.mappings_size(); ++i) {
    const v1::Mapping& m = r.mappings(i);
    const MappingKey& k = mappings[i];
    if (m.start() != k.start || m.end() != k.end || m.offset() != k.offset ||
        m.read() != k.read || m.write() != k.write || m.exec() != k.exec ||
        m.path() != k.path || m.build_id() != k.build_id) {
      return false;
    }
  }
  return true;
}

absl::Status SnapshotSession::PrepareSpace(const v1::SnapshotRequest& r,
                                           arch::Arch a, bool process_readable) {
  if (space_ != nullptr && space_->Serves(r, a, process_readable)) {
    return absl::OkStatus();
  }
  // The address space refers to the target: both go together, before the
  // files of the new table are opened.
  space_.reset();
  absl::StatusOr<std::vector<proc::SnapshotMapping>> mappings =
      Mappings(r, process_readable);
  if (!mappings.ok()) return mappings.status();
  static const ServerBinaries* const kDefaults = new ServerBinaries();
  absl::StatusOr<locate::LocateOptions> locate = RequestLocateOptions(
      env_.binaries != nullptr ? *env_.binaries : *kDefaults, r.debug_dirs(),
      r.debuginfod(), r.sysroot(), caller_);
  if (!locate.ok()) return locate.status();
  auto space = std::make_unique<Space>();
  space->locate = *std::move(locate);
  space->debug_dirs.assign(r.debug_dirs().begin(), r.debug_dirs().end());
  space->debuginfod = r.debuginfod();
  space->arch = a;
  space->pid = r.pid();
  space->process_readable = process_readable;
  if (r.mappings_size() > 0) {
    space->mappings.reserve(r.mappings_size());
    for (const v1::Mapping& m : r.mappings()) {
      space->mappings.push_back({m.start(), m.end(), m.offset(), m.read(), m.write(),
                                 m.exec(), m.path(), m.build_id()});
    }
    space->sysroot = r.sysroot();
    for (const v1::PathMapping& pm : r.path_map()) {
      space->path_map.emplace_back(pm.from(), pm.to());
    }
  }
  absl::StatusOr<std::unique_ptr<proc::SnapshotTarget>> target =
      proc::SnapshotTarget::Create(a, r.pid(), *std::move(mappings));
  if (!target.ok()) return target.status();
  space->target = *std::move(target);
  if (process_readable) space->process = memory::CreateProcessVmReadvMemory(r.pid());
  space->counted = CountReads(*space->target, env_.bytes_read);
  space->space = std::make_unique<unwinder::AddressSpace>(*space->counted, *env_.cache,
                                                         &space->locate);
  space_ = std::move(space);
  return absl::OkStatus();
}

absl::StatusOr<UnwindResult> SnapshotSession::Unwind(
    const v1::SnapshotRequest& r, const std::atomic<bool>* cancel) {
  absl::Status valid = Validate(r);
  if (!valid.ok()) return valid;
  absl::StatusOr<arch::Arch> a = FromProto(r.arch());
  if (!a.ok()) return a.status();
  absl::StatusOr<arch::RegisterSet> regs = Registers(r, *a);
  if (!regs.ok()) return regs.status();
  absl::StatusOr<unwinder::SourcePolicy> sources = SourcesFromProto(r.sources());
  if (!sources.ok()) return sources.status();

  // Every sample: the process may have changed hands since the last one.
  const bool process_readable =
      r.pid() > 0 && CheckProcessAccess(caller_, r.pid()).ok();
  absl::Status s = PrepareSpace(r, *a, process_readable);
  if (!s.ok()) return s;

  // Live memory is cached for this sample only: the process runs on.
  std::unique_ptr<memory::Memory> process;
  if (space_->process != nullptr) {
    process = memory::CreateCachedMemoryView(*space_->process, kProcessCachePages);
  }
  proc::SnapshotTarget& target = *space_->target;
  s = target.SetSample(
      {r.tid(), *regs, r.stack_address(),
       absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(r.stack().data()),
                           r.stack().size()),
       process.get()});
  if (!s.ok()) return s;

  unwinder::UnwindOptions options;
  options.max_frames =
      r.max_frames() == 0
          ? limits_.default_frames
          : static_cast<int>(std::min<uint32_t>(r.max_frames(), limits_.max_frames));
  options.cancel = cancel;
  options.sources = *sources;
  UnwindResult result = Describe(
      unwinder::UnwindTarget(*space_->counted, *space_->space, options), target);
  // The request's stack and this sample's process memory go away now.
  target.ClearSample();
  return result;
}

}  // namespace unwindd::service
