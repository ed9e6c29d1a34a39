#include "unwinder/address_space.h"

#include <sys/stat.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "arch/pac.h"
#include "proc/core_elf.h"

namespace unwindd::unwinder {
namespace {

// The vDSO is a few pages; anything larger is not one we trust to copy.
constexpr uint64_t kMaxVdsoSize = 1 << 20;

// The largest module image rebuilt from target memory (libxul-sized
// objects are ~150 MiB); larger ones are reported, not copied.
constexpr uint64_t kMaxImageFromMemory = uint64_t{512} << 20;

// A core names its mapped files but records no inode.
bool NamedWithoutInode(const proc::Mapping& m) {
  return m.inode == 0 && !m.path.empty() && m.path[0] != '[';
}

bool SameFile(const proc::Mapping& a, const proc::Mapping& b) {
  return a.path == b.path && a.inode == b.inode && a.dev_major == b.dev_major &&
         a.dev_minor == b.dev_minor;
}

const proc::Mapping& LowestOffset(const MappedModule& mm) {
  const proc::Mapping* lowest = &mm.mappings.front();
  for (const proc::Mapping& m : mm.mappings) {
    if (m.offset < lowest->offset) lowest = &m;
  }
  return *lowest;
}

}  // namespace

AddressSpace::AddressSpace(proc::Target& target, ModuleCache& cache)
    : target_(target),
      cache_(cache),
      code_address_mask_(
          arch::CodeAddressMask(target.arch(), target.pac_mask())) {
  for (const proc::Mapping& m : target.mappings()) {
    bool vdso = m.path == "[vdso]";
    if (!m.IsFileBacked() && !vdso && !NamedWithoutInode(m)) continue;
    // A file is mapped as consecutive segments (r--, r-x, r--, rw-); a
    // different file or a gap of anonymous memory (.bss) in between keeps
    // them one module as long as it is the same file again.
    if (!modules_.empty() && SameFile(modules_.back().mappings.back(), m)) {
      modules_.back().mappings.push_back(m);
      modules_.back().end = m.end;
      continue;
    }
    MappedModule mm;
    mm.path = m.path;
    mm.start = m.start;
    mm.end = m.end;
    mm.mappings.push_back(m);
    modules_.push_back(std::move(mm));
  }
}

MappedModule* AddressSpace::Find(uint64_t pc) {
  auto it = std::upper_bound(
      modules_.begin(), modules_.end(), pc,
      [](uint64_t v, const MappedModule& m) { return v < m.start; });
  if (it == modules_.begin()) return nullptr;
  --it;
  bool inside = false;
  for (const proc::Mapping& m : it->mappings) inside |= m.Contains(pc);
  if (!inside) return nullptr;
  if (!it->opened) Open(*it);
  return &*it;
}

void AddressSpace::Open(MappedModule& mm) {
  mm.opened = true;
  const proc::Mapping& first = mm.mappings.front();
  absl::StatusOr<std::shared_ptr<Module>> module;
  if (mm.path == "[vdso]") {
    uint64_t size = first.end - first.start;
    if (size > kMaxVdsoSize) {
      mm.open_status = absl::DataLossError("[vdso] mapping is implausibly large");
      return;
    }
    std::vector<uint8_t> image(size);
    absl::Status s = target_.memory().ReadFully(first.start, absl::MakeSpan(image));
    if (!s.ok()) {
      mm.open_status = s;
      return;
    }
    module = cache_.GetImage(std::move(image), "[vdso]");
  } else {
    module = OpenFile(mm);
  }
  if (!module.ok()) {
    mm.open_status = module.status();
    // The mapping of file offset 0 starts with the ELF header.
    const proc::Mapping& lowest = LowestOffset(mm);
    if (mm.path != "[vdso]" && lowest.offset == 0) OpenFromMemory(mm, lowest.start);
    return;
  }
  // Any mapping of the file gives the bias; the one at the lowest offset is
  // the most likely to be covered by a PT_LOAD.
  const proc::Mapping& lowest = LowestOffset(mm);
  absl::StatusOr<uint64_t> bias = (*module)->LoadBias(lowest.start, lowest.offset);
  if (!bias.ok()) {
    mm.open_status = bias.status();
    return;
  }
  mm.module = *std::move(module);
  mm.load_bias = *bias;
  mm.bias_known = true;
}

absl::StatusOr<std::shared_ptr<Module>> AddressSpace::OpenFile(MappedModule& mm) {
  const proc::Mapping& first = mm.mappings.front();
  mm.recorded_build_id = target_.RecordedBuildId(first);
  const std::vector<std::string> candidates = target_.FileCandidates(first);
  absl::Status last_error = absl::NotFoundError(absl::StrFormat(
      "%s not found (tried %s)", mm.path, absl::StrJoin(candidates, ", ")));
  std::string mismatch;
  for (const std::string& candidate : candidates) {
    // The path may now name another file (a library upgraded under a
    // running process): only the mapped inode will do. Cores record no
    // inode; the build-id check below protects them instead.
    struct stat st;
    if (stat(candidate.c_str(), &st) != 0) continue;
    if (first.inode != 0 && st.st_ino != first.inode) continue;
    absl::StatusOr<std::shared_ptr<Module>> m = cache_.GetFile(candidate);
    if (!m.ok()) {
      last_error = m.status();
      continue;
    }
    const std::string& id = (*m)->build_id();
    if (!mm.recorded_build_id.empty() && !id.empty() && id != mm.recorded_build_id) {
      if (mismatch.empty()) {
        mismatch = absl::StrFormat("%s has build-id %s but %s was %s", candidate,
                                   id, mm.path, mm.recorded_build_id);
      }
      continue;
    }
    mm.file = candidate;
    return m;
  }
  if (!mismatch.empty()) {
    mm.mismatch = true;
    return absl::FailedPreconditionError(absl::StrCat("build-id mismatch: ", mismatch));
  }
  return last_error;
}

void AddressSpace::OpenFromMemory(MappedModule& mm, uint64_t header_start) {
  memory::Memory& mem = target_.memory();
  absl::StatusOr<std::vector<uint8_t>> image =
      proc::RebuildImageFromMemory(mem, header_start, kMaxImageFromMemory);
  if (image.ok()) {
    absl::StatusOr<std::shared_ptr<Module>> m =
        cache_.GetImage(*std::move(image), mm.path);
    // Only an image that is the build the target recorded will do.
    if (m.ok() && (mm.recorded_build_id.empty() ||
                   (*m)->build_id() == mm.recorded_build_id)) {
      const proc::Mapping& lowest = LowestOffset(mm);
      absl::StatusOr<uint64_t> bias = (*m)->LoadBias(lowest.start, lowest.offset);
      if (bias.ok()) {
        mm.module = *std::move(m);
        mm.load_bias = *bias;
        mm.bias_known = true;
        mm.from_memory = true;
        return;
      }
    }
  }
  // At least the bias, so frames here still get a module-relative PC that
  // can be symbolized later, once the file is found.
  absl::StatusOr<proc::ElfImage> headers =
      proc::ReadElfImage(mem, header_start, proc::ElfView::kLoaded);
  if (headers.ok()) {
    mm.load_bias = headers->load_bias;
    mm.bias_known = true;
  }
}

}  // namespace unwindd::unwinder
