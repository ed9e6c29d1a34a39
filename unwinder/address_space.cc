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

AddressSpace::AddressSpace(proc::Target& target, ModuleCache& cache,
                           const locate::LocateOptions* locate)
    : target_(target),
      cache_(cache),
      locate_(locate),
      code_address_mask_(
          arch::CodeAddressMask(target.arch(), target.pac_mask())) {
  for (const proc::Mapping& m : target.mappings()) {
    bool vdso = m.path == "[vdso]";
    if (std::shared_ptr<const proc::CodeImage> code = target.CodeImageFor(m)) {
      // Generated code with an image of its own: one module per mapping.
      MappedModule mm;
      mm.path = m.path;
      mm.start = m.start;
      mm.end = m.end;
      mm.mappings.push_back(m);
      mm.code_name = code->name;
      modules_.push_back(std::move(mm));
      continue;
    }
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
  if (std::shared_ptr<const proc::CodeImage> code = target_.CodeImageFor(first)) {
    module = code->elf != nullptr ? cache_.GetImage(*code->elf, mm.path)
                                  : absl::NotFoundError("generated code without an image");
  } else if (mm.path == "[vdso]") {
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
    if (mm.path != "[vdso]" && lowest.offset == 0 && target_.CodeImageFor(first) == nullptr) {
      OpenFromMemory(mm, lowest.start);
    }
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
  // The target's own candidates first, then (with locate options) the
  // build-id directories and debuginfod: unwinder/locate/locator.h.
  locate::LocateOptions options;
  if (locate_ != nullptr) options = *locate_;
  if (locate_ == nullptr) options.debug_dirs.clear();
  locate::MainFileQuery query;
  query.recorded_path = mm.path;
  query.build_id = mm.recorded_build_id;
  query.candidates =
      locate::ClassifyCandidates(candidates, mm.path, options.sysroot, "");
  // The path may now name another file (a library upgraded under a running
  // process): only the mapped inode will do. Cores record no inode; the
  // build-id check protects them instead.
  query.inode = first.inode;
  ModuleCache::DebugLookup debug{locate_, mm.path};
  const ModuleCache::DebugLookup* lookup = locate_ != nullptr ? &debug : nullptr;
  absl::flat_hash_map<std::string, std::shared_ptr<Module>> opened;
  options.read_build_id = [&](const std::string& path) -> absl::StatusOr<std::string> {
    absl::StatusOr<std::shared_ptr<Module>> m = cache_.GetFile(path, lookup);
    if (!m.ok()) return m.status();
    opened[path] = *m;
    return (*m)->build_id();
  };
  locate::LocateResult r = locate::LocateMainFile(query, options);
  mm.locate_time = r.took;
  if (r.found.has_value()) {
    const locate::Located& f = *r.found;
    std::shared_ptr<Module> module = opened[f.path];
    if (module == nullptr) {
      // Fetched: debuginfod's cache is the process's own (as_self).
      absl::StatusOr<std::shared_ptr<Module>> m = absl::UnknownError("not opened");
      auto open = [&] { m = cache_.GetFile(f.path, lookup); };
      if (options.as_self) {
        options.as_self(open);
      } else {
        open();
      }
      if (!m.ok()) return m.status();
      module = *m;
    }
    mm.file = f.path;
    mm.file_origin = std::string(locate::OriginName(f.origin));
    mm.fetched = f.fetched;
    mm.downloaded = f.downloaded;
    return module;
  }
  if (const locate::Attempt* a = r.mismatch()) {
    mm.mismatch = true;
    return a->status;
  }
  // As before: "not found (tried ...)" over the target's candidates, or the
  // last of their errors that says more; then what the other locators said.
  absl::Status error = absl::NotFoundError(absl::StrFormat(
      "%s not found (tried %s)", mm.path, absl::StrJoin(candidates, ", ")));
  std::vector<std::string> more;
  for (const locate::Attempt& a : r.attempts) {
    const bool candidate = a.origin != locate::Origin::kBuildIdDir &&
                           a.origin != locate::Origin::kDebuginfod;
    if (candidate && !absl::IsNotFound(a.status)) error = a.status;
    if (!candidate && !absl::IsNotFound(a.status)) {
      more.push_back(std::string(a.status.message()));
    }
    if (a.origin == locate::Origin::kDebuginfod && absl::IsNotFound(a.status)) {
      more.push_back(std::string(a.status.message()));
    }
  }
  if (!more.empty()) {
    error = absl::Status(error.code(),
                         absl::StrCat(error.message(), "; ", absl::StrJoin(more, "; ")));
  }
  return error;
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
