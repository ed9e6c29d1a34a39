#include "proc/core_modules.h"

#include <elf.h>

#include <algorithm>
#include <map>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "proc/link_map.h"

namespace unwindd::proc {
namespace {

// auxv types (include/uapi/linux/auxvec.h).
constexpr uint64_t kAtPhdr = 3;
constexpr uint64_t kAtPhnum = 5;
constexpr uint64_t kAtEntry = 9;
constexpr uint64_t kAtExecfn = 31;
constexpr uint64_t kAtSysinfoEhdr = 33;
// Every arch we support maps at least 4 KiB pages; mappings of a module
// are page-aligned views of its PT_LOAD segments.
constexpr uint64_t kPage = 4096;
constexpr absl::string_view kDeleted = " (deleted)";
// How many segments before an executable one may hold its ELF header: with
// -z separate-code the header is in the read-only segment before the text,
// and a gap of reserved address space may sit in between.
constexpr size_t kMaxScanBack = 4;
// Bounds the header scan of a core with very many executable segments.
constexpr int kMaxHeaderProbes = 65536;

uint64_t PageDown(uint64_t v) { return v & ~(kPage - 1); }

// The core's segments sorted by address, for the lookups discovery makes
// once per mapping (a core may have tens of thousands of both).
class SegmentIndex {
 public:
  explicit SegmentIndex(const CoreFile& core) {
    for (const CoreSegment& s : core.segments()) sorted_.push_back(&s);
    std::stable_sort(sorted_.begin(), sorted_.end(),
                     [](const CoreSegment* a, const CoreSegment* b) {
                       return a->vaddr < b->vaddr;
                     });
  }
  const std::vector<const CoreSegment*>& sorted() const { return sorted_; }

  const CoreSegment* Containing(uint64_t addr) const {
    auto it = std::upper_bound(
        sorted_.begin(), sorted_.end(), addr,
        [](uint64_t a, const CoreSegment* s) { return a < s->vaddr; });
    if (it == sorted_.begin()) return nullptr;
    --it;
    return addr - (*it)->vaddr < (*it)->memsz ? *it : nullptr;
  }

  // Permissions from the segment of the same mapping: the kernel and gdb
  // write one PT_LOAD per mapping, starting where it starts.
  void SetPerms(Mapping& m) const {
    const CoreSegment* s = Containing(m.start);
    if (s == nullptr || s->vaddr != m.start) return;
    m.read = s->flags & PF_R;
    m.write = s->flags & PF_W;
    m.exec = s->flags & PF_X;
  }

 private:
  std::vector<const CoreSegment*> sorted_;
};

// Disjoint [start, end) ranges already claimed by mappings, for overlap
// queries in O(log n).
class Covered {
 public:
  void Add(uint64_t start, uint64_t end) {
    if (start < end) ranges_.emplace(start, end);
  }
  bool Overlaps(uint64_t start, uint64_t end) const {
    auto it = ranges_.lower_bound(end);  // first range starting at/after end
    // Ranges may overlap each other (a hostile NT_FILE), so look back
    // over a bounded number of earlier ones.
    for (int i = 0; i < 64 && it != ranges_.begin(); ++i) {
      --it;
      if (it->second > start) return true;
    }
    return false;
  }

 private:
  std::map<uint64_t, uint64_t> ranges_;
};

// The file-backed mappings ld.so made for a loaded image: each PT_LOAD's
// file part, page-aligned (its .bss tail is anonymous memory).
void AddImageMappings(const SegmentIndex& segs, const ElfImage& img,
                      const std::string& path, std::vector<Mapping>& out) {
  for (const ElfPhdr& p : img.phdrs) {
    if (p.type != PT_LOAD || p.filesz == 0) continue;
    uint64_t start, end;
    if (__builtin_add_overflow(img.load_bias, p.vaddr, &start) ||
        __builtin_add_overflow(start, p.filesz, &end) ||
        __builtin_add_overflow(end, kPage - 1, &end)) {
      continue;
    }
    Mapping m;
    m.start = PageDown(start);
    m.end = PageDown(end);
    m.offset = PageDown(p.offset);
    m.path = path;
    m.read = p.flags & PF_R;
    m.write = p.flags & PF_W;
    m.exec = p.flags & PF_X;
    segs.SetPerms(m);
    out.push_back(std::move(m));
  }
}

bool ImageContains(const ElfImage& img, uint64_t addr) {
  auto [lo, hi] = LoadedExtent(img, kPage);
  return addr >= lo && addr < hi;
}

// The executable's path as exec() was given it (AT_EXECFN points at the
// string on the initial stack), else the 15-byte command name.
std::string ExecutableName(const CoreFile& core, memory::Memory& dumped) {
  if (std::optional<uint64_t> fn = core.Auxv(kAtExecfn)) {
    absl::StatusOr<std::string> s = ReadCString(dumped, *fn, 4096);
    if (s.ok() && !s->empty()) return *s;
  }
  if (core.prpsinfo() && !core.prpsinfo()->fname.empty()) {
    return core.prpsinfo()->fname;
  }
  return "";
}

// DT_SONAME through DT_STRTAB, whose value ld.so may or may not have
// relocated in place.
std::string SoName(memory::Memory& dumped, const ElfImage& img) {
  absl::StatusOr<std::vector<std::pair<int64_t, uint64_t>>> dyn =
      ReadDynamic(dumped, img);
  if (!dyn.ok()) return "";
  uint64_t strtab = 0, soname = UINT64_MAX;
  for (const auto& [tag, v] : *dyn) {
    if (tag == DT_STRTAB) strtab = v;
    if (tag == DT_SONAME) soname = v;
  }
  if (strtab == 0 || soname == UINT64_MAX) return "";
  if (!ImageContains(img, strtab)) strtab += img.load_bias;
  absl::StatusOr<std::string> s = ReadCString(dumped, strtab + soname, 256);
  return s.ok() ? *s : "";
}

void FromNtFile(const CoreFile& core, const SegmentIndex& segs,
                DiscoveredModules& out) {
  const std::optional<uint64_t> entry = core.Auxv(kAtEntry);
  const std::optional<uint64_t> phdr = core.Auxv(kAtPhdr);
  for (const NtFileEntry& e : *core.nt_file()) {
    Mapping m;
    m.start = e.start;
    m.end = e.end;
    m.offset = e.offset;
    m.path = e.path;
    // d_path() marks unlinked files; the name is what was mapped.
    if (absl::EndsWith(m.path, kDeleted)) {
      m.path.resize(m.path.size() - kDeleted.size());
      m.deleted = true;
    }
    segs.SetPerms(m);
    if (out.main_executable.empty() &&
        ((entry && m.Contains(*entry)) || (phdr && m.Contains(*phdr)))) {
      out.main_executable = m.path;
    }
    out.mappings.push_back(std::move(m));
  }
  if (out.main_executable.empty() && core.prpsinfo()) {
    // No auxv: the file whose name starts with the command name.
    for (const Mapping& m : out.mappings) {
      absl::string_view base = m.path;
      base = base.substr(base.rfind('/') + 1);
      if (!core.prpsinfo()->fname.empty() &&
          absl::StartsWith(base, core.prpsinfo()->fname)) {
        out.main_executable = m.path;
        break;
      }
    }
  }
}

absl::Status FromLinkMap(const CoreFile& core, const SegmentIndex& segs,
                         memory::Memory& dumped,
                         const FileHeaderReader& file_headers,
                         DiscoveredModules& out) {
  std::optional<uint64_t> phdr = core.Auxv(kAtPhdr);
  std::optional<uint64_t> phnum = core.Auxv(kAtPhnum);
  if (!phdr || !phnum) return absl::NotFoundError("no AT_PHDR in NT_AUXV");
  absl::StatusOr<ElfImage> exe =
      ElfImageFromPhdrs(dumped, *phdr, *phnum, core.elf_class());
  if (!exe.ok()) {
    // The core did not dump the executable's first page (qemu-user dumps
    // only writable memory): take its headers from the file and place them
    // with AT_PHDR. PT_DYNAMIC, r_debug and the link_map list are in
    // written, hence dumped, memory.
    absl::StatusOr<ElfImage> file =
        file_headers(ExecutableName(core, dumped), true);
    if (!file.ok()) {
      return absl::NotFoundError(
          absl::StrCat(exe.status().message(), "; ", file.status().message()));
    }
    const ElfPhdr* pt_phdr = nullptr;
    for (const ElfPhdr& p : file->phdrs) {
      if (p.type == PT_PHDR) pt_phdr = &p;
    }
    const std::optional<uint64_t> entry = core.Auxv(kAtEntry);
    if (pt_phdr != nullptr) {
      file->load_bias = *phdr - pt_phdr->vaddr;
    } else if (entry) {
      file->load_bias = *entry - file->entry;
    } else {
      return absl::NotFoundError(
          "the executable has no PT_PHDR and no AT_ENTRY");
    }
    exe = std::move(file);
  }
  absl::StatusOr<uint64_t> r_debug = FindRDebug(dumped, *exe);
  if (!r_debug.ok()) return r_debug.status();
  absl::StatusOr<std::vector<LinkMapEntry>> objs =
      ReadLinkMap(dumped, *r_debug, core.word_size());
  if (!objs.ok()) return objs.status();
  const std::optional<uint64_t> vdso = core.Auxv(kAtSysinfoEhdr);
  const CoreSegment* vdso_seg = vdso ? segs.Containing(*vdso) : nullptr;
  for (const LinkMapEntry& e : *objs) {
    if (vdso_seg != nullptr && e.l_ld - vdso_seg->vaddr < vdso_seg->memsz) {
      continue;  // the vDSO: read from memory, added below
    }
    if (e.name.empty()) {
      out.main_executable = ExecutableName(core, dumped);
      AddImageMappings(segs, *exe, out.main_executable, out.mappings);
      continue;
    }
    // A library's header is at its bias when its first PT_LOAD has vaddr 0,
    // as every shared library's does; check the bias agrees.
    absl::StatusOr<ElfImage> img =
        ReadElfImage(dumped, e.l_addr, ElfView::kLoaded);
    if (!img.ok() || img->load_bias != e.l_addr) {
      img = file_headers(e.name, false);
      if (!img.ok()) {
        out.warnings.push_back(absl::StrFormat(
            "%s (loaded at 0x%x): headers neither in the core nor readable "
            "from a file: %s",
            e.name, e.l_addr, img.status().message()));
        continue;
      }
      img->load_bias = e.l_addr;
    }
    AddImageMappings(segs, *img, e.name, out.mappings);
  }
  return absl::OkStatus();
}

void FromElfHeaders(const CoreFile& core, const SegmentIndex& index,
                    memory::Memory& dumped,
                    const BuildIdFinder& find_by_build_id,
                    DiscoveredModules& out) {
  const std::vector<const CoreSegment*>& segs = index.sorted();
  const std::optional<uint64_t> entry = core.Auxv(kAtEntry);
  const std::optional<uint64_t> vdso = core.Auxv(kAtSysinfoEhdr);
  Covered covered;
  int probes = 0;
  for (size_t i = 0; i < segs.size() && probes < kMaxHeaderProbes; ++i) {
    if (!(segs[i]->flags & PF_X) || segs[i]->memsz == 0) continue;
    if (covered.Overlaps(segs[i]->vaddr, segs[i]->vaddr + 1)) continue;
    for (size_t back = 0; back <= kMaxScanBack && back <= i; ++back) {
      const uint64_t base = segs[i - back]->vaddr;
      ++probes;
      absl::StatusOr<ElfImage> img =
          ReadElfImage(dumped, base, ElfView::kLoaded);
      if (!img.ok() || (img->type != ET_EXEC && img->type != ET_DYN) ||
          !ImageContains(*img, segs[i]->vaddr)) {
        continue;
      }
      auto [lo, hi] = LoadedExtent(*img, kPage);
      covered.Add(lo, hi);
      if (vdso && base == *vdso) break;  // added separately
      std::string name;
      if (entry && ImageContains(*img, *entry)) {
        name = ExecutableName(core, dumped);
        out.main_executable = name;
      } else {
        name = SoName(dumped, *img);
      }
      std::string build_id;
      if (name.empty()) {
        absl::StatusOr<std::string> id =
            ReadBuildId(dumped, *img, ElfView::kLoaded);
        if (id.ok()) {
          build_id = *id;
          name = find_by_build_id(build_id);
        }
      }
      if (name.empty()) {
        out.warnings.push_back(absl::StrFormat(
            "an ELF image at 0x%x has no readable name (DT_SONAME) and no "
            "file with its build-id '%s' was found: skipped",
            base, build_id));
        break;
      }
      AddImageMappings(index, *img, name, out.mappings);
      break;
    }
  }
}

// The vDSO (the kernel always dumps it) and every other segment as an
// anonymous mapping, so mappings() describes the whole address space.
void AddVdsoAndAnonymous(const CoreFile& core, const SegmentIndex& segs,
                         DiscoveredModules& out) {
  const std::optional<uint64_t> vdso = core.Auxv(kAtSysinfoEhdr);
  Covered covered;
  for (const Mapping& m : out.mappings) covered.Add(m.start, m.end);
  for (const CoreSegment* s : segs.sorted()) {
    if (s->memsz == 0) continue;
    const uint64_t end = s->vaddr + s->memsz;  // checked by CoreFile
    if (covered.Overlaps(s->vaddr, end)) continue;
    Mapping m;
    m.start = s->vaddr;
    m.end = end;
    m.read = s->flags & PF_R;
    m.write = s->flags & PF_W;
    m.exec = s->flags & PF_X;
    if (vdso && *vdso == s->vaddr) m.path = "[vdso]";
    out.mappings.push_back(std::move(m));
  }
}

}  // namespace

absl::string_view ModuleSourceName(ModuleSource s) {
  switch (s) {
    case ModuleSource::kNtFile:
      return "nt_file";
    case ModuleSource::kLinkMap:
      return "link_map";
    case ModuleSource::kElfHeaders:
      return "elf_headers";
    case ModuleSource::kProcMaps:
      return "proc_maps";
  }
  return "unknown";
}

DiscoveredModules DiscoverModules(const CoreFile& core, memory::Memory& dumped,
                                  const FileHeaderReader& file_headers,
                                  const BuildIdFinder& find_by_build_id) {
  DiscoveredModules out;
  const SegmentIndex segs(core);
  if (core.nt_file().has_value()) {
    out.source = ModuleSource::kNtFile;
    FromNtFile(core, segs, out);
  } else {
    out.source = ModuleSource::kLinkMap;
    absl::Status s = FromLinkMap(core, segs, dumped, file_headers, out);
    if (!s.ok()) {
      out.warnings.push_back(absl::StrCat(
          "no NT_FILE note and no usable dynamic linker list (", s.message(),
          "); modules found from ELF headers in the core's memory"));
      out.mappings.clear();
      out.source = ModuleSource::kElfHeaders;
      FromElfHeaders(core, segs, dumped, find_by_build_id, out);
    }
  }
  AddVdsoAndAnonymous(core, segs, out);
  std::stable_sort(
      out.mappings.begin(), out.mappings.end(),
      [](const Mapping& a, const Mapping& b) { return a.start < b.start; });
  return out;
}

}  // namespace unwindd::proc
