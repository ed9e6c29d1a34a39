#include "service/server/snapshots.h"

#include <limits.h>
#include <linux/fs.h>
#include <sys/auxv.h>
#include <sys/ioctl.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "memory/factories.h"
#include "proc/maps.h"
#include "proc/snapshot_target_regs.h"
#include "service/common/convert.h"

namespace unwindd::service {
namespace {

// Registers in either numbering; more than any arch has is malformed.
constexpr int kMaxRegisterValues = 64;
// Pages of live process memory kept per sample.
constexpr size_t kProcessCachePages = 64;

// The table's path rewrites, then its sysroot.
std::string MapPath(const TableDef& t, const std::string& path) {
  std::string out = path;
  for (const auto& [from, to] : t.path_map) {
    if (!from.empty() && absl::StartsWith(path, from)) {
      out = absl::StrCat(to, path.substr(from.size()));
      break;
    }
  }
  if (!t.sysroot.empty()) out = absl::StrCat(t.sysroot, out);
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

// The process's memory for one sample, remembering whether anything was
// read from it (then the read must be confirmed: PidTracker::StillThere).
class TouchedMemory final : public memory::Memory {
 public:
  explicit TouchedMemory(memory::Memory& inner) : inner_(inner) {}
  size_t Read(uint64_t addr, absl::Span<uint8_t> dst) override {
    touched_ = true;
    return inner_.Read(addr, dst);
  }
  bool touched() const { return touched_; }

 private:
  memory::Memory& inner_;
  bool touched_ = false;
};

// Does the open file have the identity the client recorded?
bool HasIdentity(const proc::SnapshotFile& f, const FileIdentity& id) {
  if (f.inode() != id.inode) return false;
  if ((id.dev_major != 0 || id.dev_minor != 0) &&
      (major(f.dev()) != id.dev_major || minor(f.dev()) != id.dev_minor)) {
    return false;
  }
  if (id.ino_generation != 0) {
    // i_generation, which PERF_RECORD_MMAP2 records; file systems without
    // one refuse the ioctl, and then it cannot be checked.
    unsigned int generation = 0;
    if (ioctl(f.fd(), FS_IOC_GETVERSION, &generation) == 0 &&
        generation != static_cast<uint32_t>(id.ino_generation)) {
      return false;
    }
  }
  return true;
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

SnapshotSession::SnapshotSession(Caller caller, UnwindEnv env, BuildIdIndex& index,
                                 VdsoImage vdso, SnapshotLimits limits)
    : caller_(std::move(caller)),
      env_(env),
      index_(index),
      vdso_(std::move(vdso)),
      limits_(limits),
      tables_(TableLimits{limits.max_tables, limits.max_table_bytes,
                          limits.max_mappings, limits.max_path_maps,
                          limits.max_image_bytes}) {}

absl::Status SnapshotSession::Validate(const v1::SnapshotRequest& r,
                                       const StackCopy& stack) const {
  if (stack.size() > limits_.max_stack_bytes) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "stack copy of %d bytes is over the server's limit of %d",
        stack.size(), limits_.max_stack_bytes));
  }
  if (r.perf_registers().values_size() > kMaxRegisterValues ||
      r.dwarf_registers().values_size() > kMaxRegisterValues) {
    return absl::InvalidArgumentError("too many register values");
  }
  if (r.pid() < 0 || r.tid() < 0) {
    return absl::InvalidArgumentError("negative pid or tid");
  }
  const bool names_table = r.mapping_table_id() != 0 || r.has_mapping_table();
  if (names_table && r.mappings_size() > 0) {
    return absl::InvalidArgumentError(
        "a sample has either its own mappings or a mapping table, not both");
  }
  if (names_table && (!r.sysroot().empty() || r.path_map_size() > 0)) {
    return absl::InvalidArgumentError(
        "a sample with a mapping table takes sysroot and path_map from the "
        "table, not from itself");
  }
  return absl::OkStatus();
}

std::shared_ptr<const proc::SnapshotFile> SnapshotSession::OpenVerified(
    const std::string& path, const std::string& build_id, const FileIdentity& id) {
  if (path.empty()) return nullptr;
  absl::StatusOr<memory::ScopedFd> fd = OpenAsCaller(caller_, path);
  if (!fd.ok()) return nullptr;
  absl::StatusOr<std::shared_ptr<const proc::SnapshotFile>> file =
      proc::SnapshotFile::FromFd(*std::move(fd));
  if (!file.ok()) return nullptr;
  if (build_id.empty()) {
    // Another file at that path now (an upgraded library) is not the one
    // the sample mapped.
    if (id.inode != 0 && !HasIdentity(**file, id)) return nullptr;
    return *file;
  }
  // Through /proc/self/fd: the module is the file the caller may read.
  absl::StatusOr<std::shared_ptr<unwinder::Module>> module =
      env_.cache->GetFile((*file)->proc_path());
  if (!module.ok() || (*module)->build_id() != build_id) return nullptr;
  index_.Put(build_id, path);
  return *file;
}

std::shared_ptr<const proc::SnapshotFile> SnapshotSession::File(
    const std::string& path, const std::string& build_id, const FileIdentity& id,
    std::string* opened) {
  std::string key = absl::StrCat(path, std::string(1, '\0'), build_id,
                                 std::string(1, '\0'), id.inode, ":", id.dev_major,
                                 ":", id.dev_minor, ":", id.ino_generation);
  auto it = files_.find(key);
  if (it != files_.end()) {
    *opened = it->second.path;
    return it->second.file;
  }
  OpenedFile f{OpenVerified(path, build_id, id), path};
  if (f.file == nullptr && !build_id.empty()) {
    std::string known = index_.Get(build_id);
    if (!known.empty() && known != path) {
      f.file = OpenVerified(known, build_id, id);
      f.path = known;
    }
  }
  if (f.file == nullptr) f.path.clear();
  *opened = f.path;
  // Bounded: tables built from dropped entries keep their files alive.
  if (static_cast<int>(files_.size()) >= limits_.max_open_files) files_.clear();
  std::shared_ptr<const proc::SnapshotFile> file = f.file;
  files_.emplace(std::move(key), std::move(f));
  return file;
}

void SnapshotSession::Resolve(TableState& t) {
  t.resolved = true;
  const TableDef& def = *t.def;
  t.mappings.reserve(def.mappings.size());
  t.opened_paths.reserve(def.mappings.size());
  for (const TableMapping& tm : def.mappings) {
    proc::SnapshotMapping sm;
    sm.mapping = tm.mapping;
    sm.build_id = tm.build_id;
    sm.image = tm.image;
    std::string opened;
    const std::string& path = tm.mapping.path;
    if (path == "[vdso]") {
      if (tm.image != nullptr && !tm.build_id.empty()) {
        // The image must be the build the mapping names.
        absl::StatusOr<std::shared_ptr<unwinder::Module>> mod =
            env_.cache->GetImage(*tm.image, "[vdso]");
        if (!mod.ok() || (*mod)->build_id() != tm.build_id) {
          t.status = absl::InvalidArgumentError(absl::StrFormat(
              "the [vdso] image at 0x%x is not an ELF image with build-id %s%s",
              tm.mapping.start, tm.build_id,
              mod.ok() ? absl::StrCat(" (it has ", (*mod)->build_id(), ")") : ""));
          return;
        }
      } else if (tm.image == nullptr && !tm.build_id.empty() &&
                 tm.build_id == vdso_.build_id) {
        // The same kernel's vDSO is the same image in every process.
        sm.image = vdso_.bytes;
      }
    } else if (!path.empty() && path[0] != '[') {
      const std::string mapped = MapPath(def, path);
      sm.file = File(mapped, tm.build_id,
                     {tm.inode, tm.dev_major, tm.dev_minor, tm.ino_generation}, &opened);
      if (opened == path) opened.clear();
    }
    t.mappings.push_back(std::move(sm));
    t.opened_paths.push_back(std::move(opened));
  }
}

absl::StatusOr<std::shared_ptr<TableState>> SnapshotSession::ProcTable(pid_t pid) {
  absl::StatusOr<std::vector<proc::Mapping>> maps = proc::ReadMaps(pid);
  if (!maps.ok()) return maps.status();
  auto def = std::make_shared<TableDef>();
  auto t = std::make_shared<TableState>(def);
  t->resolved = true;
  for (const proc::Mapping& m : *maps) {
    proc::SnapshotMapping sm{m, nullptr, nullptr, ""};
    if (m.IsFileBacked()) {
      std::string opened;
      sm.file = m.deleted ? nullptr : File(m.path, "", FileIdentity{}, &opened);
      if (sm.file == nullptr || sm.file->inode() != m.inode) {
        // Another file at that path now, or another mount namespace: the
        // mapped inode itself. The caller may read the process, so the
        // server may open it on the caller's behalf.
        memory::ScopedFd fd = memory::OpenCloexec(
            absl::StrFormat("/proc/%d/map_files/%x-%x", pid, m.start, m.end).c_str(),
            O_RDONLY | O_NONBLOCK | O_NOCTTY);
        absl::StatusOr<std::shared_ptr<const proc::SnapshotFile>> f =
            fd.valid() ? proc::SnapshotFile::FromFd(std::move(fd))
                       : absl::NotFoundError("");
        sm.file = f.ok() ? *f : nullptr;
      }
    }
    def->mappings.push_back({m, "", m.inode, m.dev_major, m.dev_minor, 0, nullptr});
    t->mappings.push_back(std::move(sm));
    t->opened_paths.emplace_back();
  }
  // What was read was the sampled process's only if it is still there.
  if (!pids_.StillThere(pid)) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "the sample has no mappings, and process %d exited while its "
        "/proc/%d/maps was read",
        pid, pid));
  }
  return t;
}

absl::StatusOr<std::shared_ptr<TableState>> SnapshotSession::TableFor(
    const v1::SnapshotRequest& r, const PidUse& pid) {
  std::shared_ptr<TableState> t;
  if (r.mappings_size() > 0) {
    if (inline_ == nullptr ||
        !SameTable(*inline_->def, r.mappings(), r.sysroot(), r.path_map())) {
      absl::StatusOr<std::shared_ptr<TableDef>> def =
          ParseTable(r.mappings(), r.sysroot(), r.path_map(),
                     TableLimits{limits_.max_tables, limits_.max_table_bytes,
                                 limits_.max_mappings, limits_.max_path_maps,
                                 limits_.max_image_bytes});
      if (!def.ok()) return def.status();
      inline_.reset();  // its space goes before the new one is built
      inline_ = std::make_shared<TableState>(*std::move(def));
    }
    t = inline_;
  } else if (r.mapping_table_id() != 0 || r.has_mapping_table()) {
    absl::StatusOr<std::shared_ptr<TableState>> found = tables_.Find(
        r.mapping_table_id() != 0 ? r.mapping_table_id() : r.mapping_table().id());
    if (!found.ok()) return found.status();
    t = *std::move(found);
  } else if (r.pid() != 0 && r.pid() == last_pid_ && last_table_ != nullptr) {
    t = last_table_;
  } else if (r.pid() != 0) {
    if (!pid.live) {
      const std::string why = absl::StrFormat(
          "the sample has no mappings, and process %d cannot stand for them: %s",
          r.pid(), pid.reason);
      return pid.denied ? absl::PermissionDeniedError(why)
                        : absl::FailedPreconditionError(why);
    }
    absl::StatusOr<std::shared_ptr<TableState>> proc_table = ProcTable(r.pid());
    if (!proc_table.ok()) return proc_table.status();
    t = *std::move(proc_table);
  } else {
    return absl::InvalidArgumentError(
        "the sample has no mappings, no mapping table and no pid");
  }
  if (r.pid() != 0) {
    last_pid_ = r.pid();
    last_table_ = t;
  }
  if (!t->resolved) Resolve(*t);
  if (!t->status.ok()) return t->status;
  return t;
}

void SnapshotSession::DropSpace(TableState& t) {
  // The address space refers to the target: both go, space first.
  t.space.reset();
  t.counted.reset();
  t.target.reset();
  t.module_rows.clear();
  t.module_answers.clear();
}

absl::Status SnapshotSession::EnsureSpace(const std::shared_ptr<TableState>& table,
                                          arch::Arch a, const v1::SnapshotRequest& r) {
  TableState& t = *table;
  t.last_use = ++clock_;
  const bool same_locate =
      r.debuginfod() == t.debuginfod &&
      r.debug_dirs_size() == static_cast<int>(t.debug_dirs.size()) &&
      std::equal(r.debug_dirs().begin(), r.debug_dirs().end(), t.debug_dirs.begin());
  if (t.space != nullptr && t.arch == a && same_locate) return absl::OkStatus();
  // Checked before anything is dropped: a sample with bad debug_dirs (or
  // debuginfod on a server without one) costs the table nothing.
  static const ServerBinaries* const kDefaults = new ServerBinaries();
  absl::StatusOr<locate::LocateOptions> locate = RequestLocateOptions(
      env_.binaries != nullptr ? *env_.binaries : *kDefaults, r.debug_dirs(),
      r.debuginfod(), t.def->sysroot, caller_);
  if (!locate.ok()) return locate.status();
  DropSpace(t);
  // At most kMaxSpaces tables keep an address space (each has a step cache
  // and opened modules): the least recently used gives its up.
  with_space_.erase(std::remove_if(with_space_.begin(), with_space_.end(),
                                   [](const std::weak_ptr<TableState>& w) {
                                     std::shared_ptr<TableState> s = w.lock();
                                     return s == nullptr || s->space == nullptr;
                                   }),
                    with_space_.end());
  if (with_space_.size() >= kMaxSpaces) {
    auto oldest = std::min_element(
        with_space_.begin(), with_space_.end(),
        [](const std::weak_ptr<TableState>& x, const std::weak_ptr<TableState>& y) {
          return x.lock()->last_use < y.lock()->last_use;
        });
    DropSpace(*oldest->lock());
    with_space_.erase(oldest);
  }
  absl::StatusOr<std::unique_ptr<proc::SnapshotTarget>> target =
      proc::SnapshotTarget::Create(a, 0, t.mappings);
  if (!target.ok()) return target.status();
  t.arch = a;
  t.debug_dirs.assign(r.debug_dirs().begin(), r.debug_dirs().end());
  t.debuginfod = r.debuginfod();
  t.locate = *std::move(locate);
  t.target = *std::move(target);
  t.counted = CountReads(*t.target, env_.bytes_read);
  t.space = std::make_unique<unwinder::AddressSpace>(*t.counted, *env_.cache, &t.locate);
  with_space_.push_back(table);
  return absl::OkStatus();
}

unwinder::ThreadStack& SnapshotSession::Walk(TableState& t, const arch::RegisterSet& regs,
                                             const unwinder::UnwindOptions& options) {
  // Into the session's own stack, whose frames keep their room from sample
  // to sample: no allocation per sample.
  unwinder::UnwindRegistersInto(*t.space, t.counted->memory(), regs, options, &walk_);
  return walk_;
}

const std::string& SnapshotSession::EncodedModule(TableState& t, int module) {
  const unwinder::MappedModule& mm = t.space->modules()[module];
  TableState::ModuleAnswer& cached = t.module_answers[module];
  if (cached.built &&
      (cached.with_debug_info || mm.module == nullptr || !mm.module->debug_info())) {
    return cached.bytes;
  }
  SampleAnswer::Module m;
  m.path = mm.path;
  m.build_id = mm.module ? mm.module->build_id() : mm.recorded_build_id;
  m.start = mm.start;
  m.end = mm.end;
  // The file offset at `start`: its lowest mapping's (sorted by start).
  m.offset = mm.mappings.empty() ? 0 : mm.mappings.front().offset;
  m.load_bias = mm.load_bias;
  int& row = t.module_rows[module];
  if (row < 0) {
    row = static_cast<int>(t.mappings.size());  // none
    for (size_t i = 0; i < t.mappings.size(); ++i) {
      if (t.mappings[i].mapping.start == mm.start) {
        row = static_cast<int>(i);
        break;
      }
    }
  }
  if (row < static_cast<int>(t.opened_paths.size())) {
    m.file = t.opened_paths[row];
    // The table had no file for it: what the locators found instead
    // (a build-id directory, debuginfod's cache), as UnwindTarget says.
    if (t.mappings[row].file == nullptr && mm.file != mm.path) m.file = mm.file;
  }
  const std::string error(mm.open_status.message());
  m.error = error;
  m.build_id_mismatch = mm.mismatch;
  m.from_memory = mm.from_memory;
  m.load_bias_unknown = !mm.bias_known;
  m.fetched = mm.fetched;
  cached.with_debug_info = false;
  if (mm.module != nullptr) {
    if (std::optional<unwinder::DebugInfo> d = mm.module->debug_info()) {
      m.debug_file = std::move(d->path);
      m.debug_kind = std::move(d->kind);
      m.debug_fetched = d->fetched;
      cached.with_debug_info = true;
    }
  }
  cached.bytes = EncodeModule(m);
  cached.built = true;
  return cached.bytes;
}

void SnapshotSession::FillAnswer(const unwinder::ThreadStack& st, TableState& t,
                                 SampleAnswer* out) {
  out->tid = st.tid;
  out->stop = ToProto(st.stop);
  out->stop_detail = st.stop_detail;
  const std::vector<unwinder::MappedModule>& modules = t.space->modules();
  // Grown, never cleared: the entries a sample set are reset after it.
  if (answer_index_.size() < modules.size()) answer_index_.resize(modules.size(), -1);
  if (t.module_rows.size() < modules.size()) t.module_rows.resize(modules.size(), -1);
  if (t.module_answers.size() < modules.size()) t.module_answers.resize(modules.size());
  answer_modules_.clear();
  out->frames.reserve(st.frames.size());
  for (const unwinder::Frame& f : st.frames) {
    SampleAnswer::Frame& af = out->frames.emplace_back();
    af.pc = f.pc;
    af.sp = f.sp;
    af.method = ToProto(f.method);
    if (f.module < 0 || static_cast<size_t>(f.module) >= modules.size()) continue;
    int& index = answer_index_[f.module];
    if (index < 0) {
      index = static_cast<int>(out->modules.size());
      out->modules.emplace_back().encoded = &EncodedModule(t, f.module);
      answer_modules_.push_back(f.module);
    }
    af.module = index;
    af.rel_pc = f.rel_pc;
    af.file_offset = unwinder::FileOffsetOf(modules[f.module], f.pc);
  }
  for (int m : answer_modules_) answer_index_[m] = -1;
}

absl::Status SnapshotSession::Unwind(const v1::SnapshotRequest& r,
                                     const std::atomic<bool>* cancel,
                                     SampleAnswer* out,
                                     unwinder::StopReason* stop) {
  return Unwind(r,
                absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(r.stack().data()),
                                    r.stack().size()),
                cancel, out, stop);
}

absl::Status SnapshotSession::Unwind(const v1::SnapshotRequest& r,
                                     const StackCopy& stack,
                                     const std::atomic<bool>* cancel,
                                     SampleAnswer* out,
                                     unwinder::StopReason* stop) {
  // Released after the sample, whatever becomes of it.
  absl::Cleanup release = [this, &r] {
    for (uint64_t id : r.release_mapping_table_ids()) tables_.Release(id);
  };
  // A table the sample carries is the stream's whatever becomes of the
  // sample itself.
  if (r.has_mapping_table()) {
    absl::Status s = tables_.Define(r.mapping_table());
    // Id 0 is kept nowhere, so only this sample can be told.
    if (r.mapping_table().id() == 0) return s;
  }
  absl::Status s = Validate(r, stack);
  if (!s.ok()) return s;
  absl::StatusOr<arch::Arch> a = FromProto(r.arch());
  if (!a.ok()) return a.status();
  absl::StatusOr<arch::RegisterSet> regs = Registers(r, *a);
  if (!regs.ok()) return regs.status();
  absl::StatusOr<unwinder::SourcePolicy> sources = SourcesFromProto(r.sources());
  if (!sources.ok()) return sources.status();

  // Every sample: the process may have exited, or changed hands, since
  // the last one.
  PidUse pid;
  if (r.pid() > 0) {
    PidTracker::Check c = pids_.Identify(r.pid(), r.pid_start_time());
    pid.live = c.live;
    pid.reason = std::move(c.reason);
    if (pid.live) {
      absl::Status allowed = CheckProcessAccess(caller_, r.pid());
      if (!allowed.ok()) {
        pid = {false, true,
               absl::StrFormat("%s may not read process %d: %s", caller_.Describe(),
                               r.pid(), allowed.message())};
      }
    }
  }
  absl::StatusOr<std::shared_ptr<TableState>> table = TableFor(r, pid);
  if (!table.ok()) return table.status();
  TableState& t = **table;
  s = EnsureSpace(*table, *a, r);
  if (!s.ok()) return s;

  unwinder::UnwindOptions options;
  options.max_frames =
      r.max_frames() == 0
          ? limits_.default_frames
          : static_cast<int>(std::min<uint32_t>(r.max_frames(), limits_.max_frames));
  options.cancel = cancel;
  options.sources = *sources;
  // A thread's samples in a stream share their outer frames: each walk
  // takes them from the thread's recorded walk when its return addresses
  // read the same (unwinder/walk_replay.h).
  options.thread_key = unwinder::ThreadKey(static_cast<uint32_t>(r.tid()));

  // Live memory is cached for this sample only: the process runs on.
  std::unique_ptr<memory::Memory> process;
  std::unique_ptr<memory::Memory> view;
  std::optional<TouchedMemory> touched;
  if (pid.live) {
    process = memory::CreateProcessVmReadvMemory(r.pid());
    view = memory::CreateCachedMemoryView(*process, kProcessCachePages);
    touched.emplace(*view);
  }
  proc::SnapshotSample sample{r.tid(), *regs, r.stack_address(), stack.head,
                              touched ? &*touched : nullptr};
  sample.stack_tail = stack.tail;
  s = t.target->SetSample(sample);
  if (!s.ok()) return s;
  unwinder::ThreadStack* stack_out = &Walk(t, *regs, options);
  t.target->ClearSample();
  if (touched && touched->touched() && !pids_.StillThere(r.pid())) {
    // The pid may have been another process's by the time it was read:
    // nothing read from it may stay, in the result or in the address
    // space's caches (modules opened from memory, cached steps).
    pid = {false, false,
           absl::StrFormat("process %d exited while the sample was unwound", r.pid())};
    DropSpace(t);
    s = EnsureSpace(*table, *a, r);
    if (!s.ok()) return s;
    sample.process = nullptr;
    s = t.target->SetSample(sample);
    if (!s.ok()) return s;
    stack_out = &Walk(t, *regs, options);
    t.target->ClearSample();
  }
  stack_out->tid = r.tid();
  if (stop != nullptr) *stop = stack_out->stop;
  FillAnswer(*stack_out, t, out);
  if (r.pid() > 0 && !pid.live) out->pid_ignored_reason = std::move(pid.reason);
  return absl::OkStatus();
}

}  // namespace unwindd::service
