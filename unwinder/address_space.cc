#include "unwinder/address_space.h"

#include <sys/stat.h>

#include <algorithm>

#include "absl/strings/str_format.h"
#include "arch/pac.h"

namespace unwindd::unwinder {
namespace {

// The vDSO is a few pages; anything larger is not one we trust to copy.
constexpr uint64_t kMaxVdsoSize = 1 << 20;

bool SameFile(const proc::Mapping& a, const proc::Mapping& b) {
  return a.path == b.path && a.inode == b.inode && a.dev_major == b.dev_major &&
         a.dev_minor == b.dev_minor;
}

}  // namespace

AddressSpace::AddressSpace(proc::Target& target, ModuleCache& cache)
    : target_(target),
      cache_(cache),
      code_address_mask_(
          arch::CodeAddressMask(target.arch(), target.pac_mask())) {
  for (const proc::Mapping& m : target.mappings()) {
    bool vdso = m.path == "[vdso]";
    if (!m.IsFileBacked() && !vdso) continue;
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
    module = absl::NotFoundError(absl::StrFormat("cannot open %s", mm.path));
    for (const std::string& candidate : target_.FileCandidates(first)) {
      // The path may now name another file (a library upgraded under a
      // running process): only the mapped inode will do.
      struct stat st;
      if (stat(candidate.c_str(), &st) != 0 || st.st_ino != first.inode) continue;
      module = cache_.GetFile(candidate);
      if (module.ok()) break;
    }
  }
  if (!module.ok()) {
    mm.open_status = module.status();
    return;
  }
  // Any mapping of the file gives the bias; the one at the lowest offset is
  // the most likely to be covered by a PT_LOAD.
  const proc::Mapping* lowest = &first;
  for (const proc::Mapping& m : mm.mappings) {
    if (m.offset < lowest->offset) lowest = &m;
  }
  absl::StatusOr<uint64_t> bias = (*module)->LoadBias(lowest->start, lowest->offset);
  if (!bias.ok()) {
    mm.open_status = bias.status();
    return;
  }
  mm.module = *std::move(module);
  mm.load_bias = *bias;
}

}  // namespace unwindd::unwinder
