#include "proc/perf/perf_snapshot.h"

#include <fcntl.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "memory/memory.h"
#include "memory/scoped_fd.h"
#include "proc/core_elf.h"
#include "proc/maps.h"
#include "proc/snapshot_target_regs.h"

namespace unwindd::proc::perf {
namespace {

// A file's bytes as memory at address 0, for reading its ELF notes.
class FileMemory final : public memory::Memory {
 public:
  explicit FileMemory(const SnapshotFile& f) : f_(f) {}
  size_t Read(uint64_t addr, absl::Span<uint8_t> dst) override {
    return f_.Read(addr, dst);
  }

 private:
  const SnapshotFile& f_;
};

// An image in our heap as memory at address 0.
class SpanMemory final : public memory::Memory {
 public:
  explicit SpanMemory(absl::Span<const uint8_t> s) : s_(s) {}
  size_t Read(uint64_t addr, absl::Span<uint8_t> dst) override {
    if (addr >= s_.size()) return 0;
    size_t n = std::min<uint64_t>(dst.size(), s_.size() - addr);
    std::memcpy(dst.data(), s_.data() + addr, n);
    return n;
  }

 private:
  absl::Span<const uint8_t> s_;
};

absl::StatusOr<std::string> BuildIdOf(memory::Memory& mem) {
  absl::StatusOr<ElfImage> img = ReadElfImage(mem, 0, ElfView::kFile);
  if (!img.ok()) return img.status();
  return ReadBuildId(mem, *img, ElfView::kFile);
}

// perf names anonymous mappings "//anon" and special ones "[stack]",
// "[heap]", "[vdso]"...; only absolute paths are files.
bool IsFilePath(const std::string& p) {
  return !p.empty() && p[0] == '/' && !absl::StartsWith(p, "//");
}

// tools/perf/util/build-id.c: build_id_cache__linkname, the
// .build-id/XX/REST link to the cached copy's directory.
std::string BuildIdLink(const std::string& dir, const std::string& id,
                        const std::string& name) {
  if (id.size() < 3) return "";
  return absl::StrCat(dir, "/.build-id/", id.substr(0, 2), "/", id.substr(2), "/", name);
}

}  // namespace

absl::StatusOr<OwnVdso> ReadOwnVdso() {
  absl::StatusOr<std::vector<Mapping>> maps = ReadMaps(getpid());
  if (!maps.ok()) return maps.status();
  for (const Mapping& m : *maps) {
    if (m.path != "[vdso]") continue;
    if (m.end - m.start > kMaxVdsoBytes) break;
    // Our own memory: a plain copy.
    auto bytes = std::make_shared<std::vector<uint8_t>>(m.end - m.start);
    std::memcpy(bytes->data(), reinterpret_cast<const void*>(m.start), bytes->size());
    SpanMemory mem(*bytes);
    absl::StatusOr<std::string> id = BuildIdOf(mem);
    if (!id.ok()) return id.status();
    return OwnVdso{std::move(bytes), *id};
  }
  return absl::NotFoundError("this process has no [vdso] mapping");
}

absl::StatusOr<arch::Arch> ArchOfSample(const std::string& header_arch,
                                        uint64_t regs_abi, uint64_t regs_mask) {
  const bool abi32 = regs_abi == kRegsAbi32;
  if (header_arch == "x86_64" || header_arch == "amd64") {
    return abi32 ? arch::Arch::kX86 : arch::Arch::kX86_64;
  }
  if (header_arch == "i386" || header_arch == "i486" || header_arch == "i586" ||
      header_arch == "i686" || header_arch == "x86") {
    return arch::Arch::kX86;
  }
  if (header_arch == "aarch64" || header_arch == "arm64") {
    if (abi32) {
      return absl::UnimplementedError(
          "32-bit arm (compat) samples on aarch64 are not supported");
    }
    return arch::Arch::kAArch64;
  }
  if (header_arch.empty()) {
    // arch/arm64/include/uapi/asm/perf_regs.h: PC is bit 32; x86's highest
    // register is R15, bit 23.
    if ((regs_mask >> 32) & 1) return arch::Arch::kAArch64;
    return abi32 ? arch::Arch::kX86 : arch::Arch::kX86_64;
  }
  return absl::UnimplementedError(absl::StrFormat(
      "samples recorded on %s are not supported", header_arch));
}

PerfSnapshotter::PerfSnapshotter(const RecordingInfo& info, SnapshotOptions options)
    : info_(info), options_(std::move(options)) {}

std::string PerfSnapshotter::RecordedBuildId(const PerfMapping& m) const {
  if (!m.build_id.empty()) return m.build_id;
  auto it = build_ids_.find(m.path());
  return it == build_ids_.end() ? "" : it->second;
}

const PerfSnapshotter::OpenedFile& PerfSnapshotter::Open(
    const std::string& recorded, const std::string& build_id) {
  std::string key = absl::StrCat(recorded, std::string(1, '\0'), build_id);
  auto it = files_.find(key);
  if (it != files_.end()) return it->second;
  if (files_.size() >= kMaxOpenFiles) {
    // Targets keep the files they use; only the lookup cache goes.
    files_.clear();
    file_order_.clear();
  }
  OpenedFile out;
  out.report.recorded_path = recorded;
  out.report.recorded_build_id = build_id;
  auto try_path = [&](const std::string& path) -> bool {
    memory::ScopedFd fd = memory::OpenNamedFile(path.c_str());
    if (!fd.valid()) {
      if (out.report.error.empty()) {
        out.report.error = absl::StrCat(path, ": ", std::strerror(errno));
      }
      return false;
    }
    absl::StatusOr<std::shared_ptr<const SnapshotFile>> f =
        SnapshotFile::FromFd(std::move(fd));
    if (!f.ok()) {
      out.report.error = absl::StrCat(path, ": ", f.status().message());
      return false;
    }
    FileMemory mem(**f);
    absl::StatusOr<std::string> id = BuildIdOf(mem);
    std::string file_id = id.ok() ? *id : "";
    if (!build_id.empty() && file_id != build_id) {
      out.report.mismatch = true;
      out.report.file_build_id = file_id;
      out.report.error = absl::StrFormat(
          "%s: build-id %s, the recording's is %s", path,
          file_id.empty() ? "(none)" : file_id, build_id);
      return false;
    }
    out.file = *std::move(f);
    out.report.opened_path = path;
    out.report.file_build_id = file_id;
    out.report.error.clear();
    out.report.mismatch = false;
    return true;
  };
  bool ok = try_path(options_.locate ? options_.locate(recorded) : recorded);
  if (!ok && !build_id.empty() && !options_.buildid_dir.empty()) {
    // perf record keeps a copy of every DSO with samples in its cache.
    std::string cached = BuildIdLink(options_.buildid_dir, build_id, "elf");
    std::string first_error = out.report.error;
    bool first_mismatch = out.report.mismatch;
    std::string first_file_id = out.report.file_build_id;
    if (!try_path(cached)) {
      out.report.error = first_error;
      out.report.mismatch = first_mismatch;
      out.report.file_build_id = first_file_id;
    }
  }
  file_order_.push_back(key);
  return files_.emplace(std::move(key), std::move(out)).first->second;
}

std::shared_ptr<const std::vector<uint8_t>> PerfSnapshotter::Vdso(
    const std::string& build_id) {
  auto it = vdsos_.find(build_id);
  if (it != vdsos_.end()) return it->second;
  std::shared_ptr<const std::vector<uint8_t>> image;
  if (!options_.buildid_dir.empty()) {
    for (const std::string& path :
         {absl::StrCat(options_.buildid_dir, "/[vdso]/", build_id, "/vdso"),
          BuildIdLink(options_.buildid_dir, build_id, "vdso")}) {
      memory::ScopedFd fd = memory::OpenNamedFile(path.c_str());
      if (!fd.valid()) continue;
      absl::StatusOr<std::shared_ptr<const SnapshotFile>> f =
          SnapshotFile::FromFd(std::move(fd));
      if (!f.ok() || (*f)->size() > kMaxVdsoBytes) continue;
      auto bytes = std::make_shared<std::vector<uint8_t>>((*f)->size());
      if ((*f)->Read(0, absl::MakeSpan(*bytes)) != bytes->size()) continue;
      SpanMemory mem(*bytes);
      absl::StatusOr<std::string> id = BuildIdOf(mem);
      if (!id.ok() || *id != build_id) continue;
      image = std::move(bytes);
      break;
    }
  }
  if (image == nullptr && options_.use_own_vdso) {
    if (!own_vdso_read_) {
      own_vdso_read_ = true;
      own_vdso_ = ReadOwnVdso();
    }
    struct utsname u;
    const bool same_kernel =
        uname(&u) == 0 && !info_.os_release.empty() && info_.os_release == u.release;
    if (own_vdso_.ok() && (build_id.empty() ? same_kernel
                                            : own_vdso_->build_id == build_id)) {
      image = own_vdso_->image;
    }
  }
  if (image == nullptr && options_.find_vdso) image = options_.find_vdso(build_id);
  vdsos_.emplace(build_id, image);
  return image;
}

std::vector<SnapshotMapping> PerfSnapshotter::Build(const ProcessTable& table) {
  if (build_ids_.size() != info_.build_ids.size()) {
    // perf's dsos__findnew by long name: user-space entries only.
    build_ids_.clear();
    for (const BuildIdEntry& e : info_.build_ids) {
      const uint16_t mode = e.misc & kMiscCpumodeMask;
      if (mode == kMiscKernel || mode == kMiscGuestKernel) continue;
      build_ids_[e.filename] = e.build_id;
    }
  }
  std::vector<SnapshotMapping> out;
  out.reserve(table.mappings.size());
  for (const auto& [start, m] : table.mappings) {
    SnapshotMapping sm;
    Mapping& pm = sm.mapping;
    pm.start = m.start;
    pm.end = m.end;
    pm.offset = m.pgoff;
    pm.read = m.prot & kProtRead;
    pm.write = m.prot & kProtWrite;
    pm.exec = m.prot & kProtExec;
    pm.shared = m.flags & kMapShared;
    pm.dev_major = m.maj;
    pm.dev_minor = m.min;
    pm.inode = m.ino;
    pm.path = m.path();
    const std::string& path = m.path();
    if (m.code_image != nullptr) {
      sm.code_image = m.code_image;  // generated code: its own image
    } else if (path == "[vdso]") {
      sm.build_id = RecordedBuildId(m);
      sm.image = Vdso(sm.build_id);
    } else if (IsFilePath(path)) {
      sm.build_id = RecordedBuildId(m);
      sm.file = Open(path, sm.build_id).file;
    }
    out.push_back(std::move(sm));
  }
  return out;
}

absl::Status PerfSnapshotter::Resolve(const Sample& sample, const EventAttr& attr,
                                     const ProcessTable* table, Resolved& out) {
  if (!(attr.sample_type & kSampleRegsUser) || sample.regs_user_abi == kRegsAbiNone ||
      sample.regs_user.empty()) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "sample of tid %d has no user registers (a kernel thread, or "
        "recorded without --call-graph dwarf)",
        sample.tid));
  }
  if (table == nullptr) return NoMappings(sample);
  absl::StatusOr<arch::Arch> arch =
      ArchOfSample(info_.arch, sample.regs_user_abi, attr.sample_regs_user);
  if (!arch.ok()) return arch.status();
  // In place: a RegisterSet is ~330 bytes, and this runs for every sample.
  absl::Status regs =
      RegistersFromPerfInto(*arch, attr.sample_regs_user, sample.regs_user, out.registers);
  if (!regs.ok()) return regs;
  ResolveTable(*table, *arch, out);
  return absl::OkStatus();
}

absl::Status PerfSnapshotter::ResolveWithoutRegisters(const Sample& sample,
                                                      const ProcessTable* table,
                                                      Resolved& out) {
  if (table == nullptr) return NoMappings(sample);
  // No register ABI to tell a 32-bit process on a 64-bit kernel: the
  // recording's machine.
  absl::StatusOr<arch::Arch> arch = ArchOfSample(info_.arch, kRegsAbiNone, 0);
  if (!arch.ok()) return arch.status();
  out.registers.Reset(*arch);
  ResolveTable(*table, *arch, out);
  return absl::OkStatus();
}

absl::Status PerfSnapshotter::NoMappings(const Sample& sample) {
  return absl::FailedPreconditionError(
      absl::StrFormat("no mappings are known for pid %d", sample.pid));
}

void PerfSnapshotter::ResolveTable(const ProcessTable& table, arch::Arch arch, Resolved& out) {
  auto it = targets_.find(table.pid);
  if (it != targets_.end() && it->second.generation == table.generation &&
      it->second.arch == arch) {
    lru_.splice(lru_.begin(), lru_, it->second.lru);
  } else {
    if (it == targets_.end()) {
      if (targets_.size() >= kMaxCachedTargets) {
        targets_.erase(lru_.back());
        lru_.pop_back();
      }
      lru_.push_front(table.pid);
      it = targets_.emplace(table.pid, CachedTarget{}).first;
      it->second.lru = lru_.begin();
    } else {
      lru_.splice(lru_.begin(), lru_, it->second.lru);
    }
    it->second.generation = table.generation;
    it->second.arch = arch;
    it->second.mappings = std::make_shared<const std::vector<SnapshotMapping>>(Build(table));
    it->second.target = nullptr;
    it->second.target_id = next_target_id_++;
  }
  out.target_id = it->second.target_id;
  out.arch = arch;
  out.pid = static_cast<pid_t>(table.pid);
  out.mappings = it->second.mappings;
}

absl::StatusOr<PerfSnapshotter::Prepared> PerfSnapshotter::Prepare(
    const Sample& sample, const EventAttr& attr, const ProcessTable* table) {
  absl::Status resolved = Resolve(sample, attr, table, resolved_);
  if (!resolved.ok()) return resolved;
  const Resolved* r = &resolved_;
  CachedTarget& cached = targets_.at(r->pid);
  Prepared p;
  p.arch = r->arch;
  if (cached.target == nullptr) {
    absl::StatusOr<std::unique_ptr<SnapshotTarget>> t =
        SnapshotTarget::Create(r->arch, r->pid, *r->mappings);
    if (!t.ok()) return t.status();
    cached.target = std::shared_ptr<SnapshotTarget>(*std::move(t));
    p.new_target = true;
  }
  p.target = cached.target;
  p.target_id = r->target_id;
  SnapshotSample s;
  s.tid = static_cast<pid_t>(sample.tid);
  s.registers = r->registers;
  // The kernel copies the user stack from the user SP upwards
  // (kernel/events/core.c: perf_output_sample_ustack).
  s.stack_address = r->registers.sp();
  s.stack = sample.valid_stack();
  absl::Status st = p.target->SetSample(s);
  if (!st.ok()) return st;
  return p;
}

std::vector<FileReport> PerfSnapshotter::files() const {
  std::vector<FileReport> out;
  for (const std::string& key : file_order_) {
    auto it = files_.find(key);
    if (it != files_.end()) out.push_back(it->second.report);
  }
  return out;
}

}  // namespace unwindd::proc::perf
