#include "proc/jit/gdb_jit.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "proc/jit/elf_symbol.h"
#include "proc/jit/symfile.h"

namespace unwindd::proc::jit {
namespace {

uint64_t Le(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= uint64_t{p[i]} << (8 * i);
  return v;
}

// Problems of one kind, counted, the first one kept to show: a list of
// 64Ki bad entries is one warning line, not 64Ki.
class Problems {
 public:
  void Add(const std::string& what) {
    if (count_++ == 0) first_ = what;
  }
  void Report(absl::string_view prefix, std::vector<std::string>* warnings) const {
    if (count_ == 0 || warnings == nullptr) return;
    warnings->push_back(count_ == 1 ? absl::StrCat(prefix, first_)
                                    : absl::StrCat(prefix, first_, " (and ", count_ - 1,
                                                   " more like it)"));
  }

 private:
  uint64_t count_ = 0;
  std::string first_;
};

// `size` bytes at `addr`, read a MiB at a time: a size the list lies about
// costs no more memory than the target has there.
bool ReadChunked(memory::Memory& mem, uint64_t addr, uint64_t size, std::vector<uint8_t>* out) {
  constexpr uint64_t kChunk = uint64_t{1} << 20;
  out->clear();
  // Its first and last bytes first: a size that runs past what is mapped
  // fails here, before anything is allocated.
  uint8_t probe;
  if (size == 0 || size - 1 > UINT64_MAX - addr ||
      !mem.ReadFully(addr, absl::MakeSpan(&probe, 1)).ok() ||
      !mem.ReadFully(addr + size - 1, absl::MakeSpan(&probe, 1)).ok()) {
    return size == 0;
  }
  while (out->size() < size) {
    const uint64_t at = out->size();
    const uint64_t n = std::min(kChunk, size - at);
    out->resize(at + n);
    if (!mem.ReadFully(addr + at, absl::MakeSpan(out->data() + at, n)).ok()) return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<GdbJitList> ReadGdbJitList(memory::Memory& mem, uint64_t descriptor,
                                          int word_size, const GdbJitLimits& limits) {
  if (word_size != 4 && word_size != 8) {
    return absl::InvalidArgumentError(absl::StrFormat("word size %d", word_size));
  }
  const int w = word_size;
  uint8_t d[24] = {};
  const size_t dsize = 8 + 2 * w;
  if (absl::Status s = mem.ReadFully(descriptor, absl::MakeSpan(d, dsize)); !s.ok()) {
    return absl::OutOfRangeError(
        absl::StrFormat("GDB JIT descriptor at 0x%x is not readable", descriptor));
  }
  GdbJitList out;
  out.version = Le(d, 4);
  out.action_flag = Le(d + 4, 4);
  out.relevant_entry = Le(d + 8, w);
  out.first_entry = Le(d + 8 + w, w);
  if (out.version != 1) {
    return absl::UnimplementedError(absl::StrFormat(
        "GDB JIT descriptor at 0x%x has version %d (1 is known)", descriptor, out.version));
  }
  // struct jit_code_entry: next, prev, symfile_addr (words), then the u64
  // symfile_size (at 12 on i386, whose u64 alignment is 4; 24 on 64-bit).
  const size_t esize = 3 * w + 8;
  absl::flat_hash_set<uint64_t> seen;
  uint64_t at = out.first_entry;
  while (at != 0) {
    if (out.entries.size() >= limits.max_entries) {
      out.cut = absl::StrFormat("the list is longer than %d entries", limits.max_entries);
      break;
    }
    if (!seen.insert(at).second) {
      out.cut = absl::StrFormat("the list loops back to the entry at 0x%x", at);
      break;
    }
    uint8_t e[32] = {};
    if (!mem.ReadFully(at, absl::MakeSpan(e, esize)).ok()) {
      out.cut = absl::StrFormat("the entry at 0x%x is not readable", at);
      break;
    }
    GdbJitEntry entry;
    entry.addr = at;
    entry.symfile_addr = Le(e + 2 * w, w);
    entry.symfile_size = Le(e + 3 * w, 8);
    out.entries.push_back(entry);
    at = Le(e, w);
  }
  return out;
}

std::vector<JitRegion> GdbJitRegions(memory::Memory& mem, const GdbJitList& list,
                                     const GdbJitLimits& limits, std::vector<std::string>* warnings,
                                     uint64_t* total) {
  std::vector<JitRegion> out;
  uint64_t own_total = 0;
  uint64_t& spent = total != nullptr ? *total : own_total;
  Problems unreadable, sized, unusable, no_cfi, over;
  std::vector<uint8_t> bytes;
  for (const GdbJitEntry& e : list.entries) {
    if (e.symfile_size == 0 || e.symfile_size > limits.max_symfile_bytes) {
      sized.Add(absl::StrFormat("symfile at 0x%x of %d bytes (at most %d)", e.symfile_addr,
                                   e.symfile_size, limits.max_symfile_bytes));
      continue;
    }
    if (e.symfile_size > limits.max_total_bytes - std::min(spent, limits.max_total_bytes)) {
      over.Add(absl::StrFormat("symfile at 0x%x: more than %d bytes of symfiles and images",
                               e.symfile_addr, limits.max_total_bytes));
      continue;
    }
    if (!ReadChunked(mem, e.symfile_addr, e.symfile_size, &bytes)) {
      unreadable.Add(absl::StrFormat("symfile at 0x%x (%d bytes) is not readable",
                                     e.symfile_addr, e.symfile_size));
      continue;
    }
    spent += bytes.size();
    absl::StatusOr<SymfileCode> code = SymfileRegions(bytes, e.symfile_addr, mem);
    if (!code.ok()) {
      unusable.Add(absl::StrFormat("symfile at 0x%x: %s", e.symfile_addr, code.status().message()));
      continue;
    }
    if (!code->regions.empty()) {
      const uint64_t image = code->regions.front().code->elf->size();
      if (image > limits.max_total_bytes - std::min(spent, limits.max_total_bytes)) {
        over.Add(absl::StrFormat("symfile at 0x%x: more than %d bytes of symfiles and images",
                                 e.symfile_addr, limits.max_total_bytes));
        continue;
      }
      spent += image;
    }
    if (!code->eh_frame_problem.empty()) {
      no_cfi.Add(absl::StrFormat("symfile at 0x%x: %s", e.symfile_addr, code->eh_frame_problem));
    }
    for (JitRegion& r : code->regions) out.push_back(std::move(r));
  }
  if (!list.cut.empty() && warnings != nullptr) {
    warnings->push_back(absl::StrCat("GDB JIT list read in part (", list.entries.size(),
                                     " entries): ", list.cut));
  }
  unreadable.Report("GDB JIT code not used: ", warnings);
  sized.Report("GDB JIT code not used: ", warnings);
  unusable.Report("GDB JIT code not used: ", warnings);
  over.Report("GDB JIT code not used: ", warnings);
  no_cfi.Report("GDB JIT code without CFI (frame pointers only): ", warnings);
  return out;
}

std::vector<uint64_t> FindGdbJitDescriptors(const Target& target) {
  // Each file once, with the mapping of its lowest offset (the bias).
  std::map<std::string, const Mapping*> files;
  for (const Mapping& m : target.mappings()) {
    if (m.path.empty() || m.path[0] == '[' || IsJitDumpPath(m.path)) continue;
    if (m.path.rfind("/dev/", 0) == 0 || m.path.rfind("/memfd:", 0) == 0) continue;
    const Mapping*& f = files[m.path];
    if (f == nullptr || m.offset < f->offset) f = &m;
  }
  std::vector<uint64_t> out;
  for (const auto& [path, m] : files) {
    for (const std::string& candidate : target.FileCandidates(*m)) {
      absl::StatusOr<std::optional<ElfSymbol>> sym =
          FindElfSymbol(candidate, kGdbJitDescriptorSymbol);
      if (!sym.ok()) continue;  // not opened: the next path
      if (!sym->has_value()) break;  // opened: it has none
      absl::StatusOr<uint64_t> bias = LoadBias((*sym)->loads, m->start, m->offset);
      if (bias.ok()) out.push_back((*sym)->value + *bias);
      break;
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<JitRegion> FindGdbJitCode(Target& target, std::vector<std::string>* warnings,
                                      const GdbJitLimits& limits) {
  std::vector<JitRegion> out;
  uint64_t total = 0;
  const int word = target.arch() == arch::Arch::kX86 ? 4 : 8;
  for (uint64_t d : FindGdbJitDescriptors(target)) {
    absl::StatusOr<GdbJitList> list = ReadGdbJitList(target.memory(), d, word, limits);
    if (!list.ok()) {
      if (warnings != nullptr) {
        warnings->push_back(absl::StrCat("GDB JIT code not used: ", list.status().message()));
      }
      continue;
    }
    std::vector<JitRegion> r = GdbJitRegions(target.memory(), *list, limits, warnings, &total);
    for (JitRegion& region : r) out.push_back(std::move(region));
  }
  return out;
}

}  // namespace unwindd::proc::jit
