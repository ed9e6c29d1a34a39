#include "proc/jit/elf_symbol.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include "absl/strings/str_format.h"

namespace unwindd::proc::jit {
namespace {

bool InitLibelf() {
  static const bool ok = elf_version(EV_CURRENT) != EV_NONE;
  return ok;
}

// Closes what it holds, whatever the way out.
struct ElfFile {
  int fd = -1;
  Elf* elf = nullptr;
  ~ElfFile() {
    if (elf != nullptr) elf_end(elf);
    if (fd >= 0) close(fd);
  }
};

bool Defined(const GElf_Sym& s) {
  return s.st_shndx != SHN_UNDEF && GELF_ST_TYPE(s.st_info) != STT_SECTION &&
         GELF_ST_TYPE(s.st_info) != STT_FILE;
}

bool NameIs(Elf* elf, size_t strndx, const GElf_Sym& s, absl::string_view name) {
  const char* n = elf_strptr(elf, strndx, s.st_name);
  return n != nullptr && name == n;
}

// The GNU hash of a symbol name (the dynamic linker's dl_new_hash).
uint32_t GnuHash(absl::string_view name) {
  uint32_t h = 5381;
  for (unsigned char c : name) h = h * 33 + c;
  return h;
}

uint32_t U32At(absl::Span<const uint8_t> b, uint64_t at) {
  uint32_t v;
  std::memcpy(&v, b.data() + at, 4);
  return v;
}

// .gnu.hash (the GNU extension's layout: nbuckets, symoffset, bloom_size,
// bloom_shift, bloom[bloom_size] words, buckets[nbuckets], chain[]): the
// candidate indexes of `name` in the .dynsym of `nsyms` entries; nullopt if
// the table is malformed (then the caller scans).
std::optional<std::vector<size_t>> GnuHashCandidates(absl::Span<const uint8_t> t, int word,
                                                     size_t nsyms, absl::string_view name) {
  if (t.size() < 16) return std::nullopt;
  const uint64_t nbuckets = U32At(t, 0), symoffset = U32At(t, 4), bloom = U32At(t, 8);
  const uint64_t buckets_at = 16 + bloom * word;
  if (nbuckets == 0 || bloom > t.size() || buckets_at > t.size() ||
      (t.size() - buckets_at) / 4 < nbuckets) {
    return std::nullopt;
  }
  const uint64_t chain_at = buckets_at + 4 * nbuckets;
  const uint32_t h = GnuHash(name);
  std::vector<size_t> out;
  uint64_t i = U32At(t, buckets_at + 4 * (h % nbuckets));
  if (i == 0) return out;
  if (i < symoffset) return std::nullopt;
  for (size_t steps = 0; i < nsyms && steps < nsyms; ++i, ++steps) {
    const uint64_t at = chain_at + 4 * (i - symoffset);
    if (at > t.size() - 4) return std::nullopt;
    const uint32_t c = U32At(t, at);
    if ((c | 1) == (h | 1)) out.push_back(i);
    if (c & 1) break;  // the chain's last
  }
  return out;
}

}  // namespace

absl::StatusOr<std::optional<ElfSymbol>> FindElfSymbol(const std::string& path,
                                                       absl::string_view name) {
  if (!InitLibelf()) return absl::InternalError("libelf version mismatch");
  ElfFile f;
  // O_NONBLOCK: a path a core names may be a FIFO now; only regular files
  // are read.
  f.fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (f.fd < 0) return absl::ErrnoToStatus(errno, absl::StrFormat("open %s", path));
  struct stat st;
  if (fstat(f.fd, &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  f.elf = elf_begin(f.fd, ELF_C_READ_MMAP, nullptr);
  if (f.elf == nullptr || elf_kind(f.elf) != ELF_K_ELF) return std::nullopt;
  GElf_Ehdr ehdr;
  if (gelf_getehdr(f.elf, &ehdr) == nullptr) return std::nullopt;
  const int word = ehdr.e_ident[EI_CLASS] == ELFCLASS64 ? 8 : 4;
  ElfSymbol out;
  size_t phnum = 0;
  if (elf_getphdrnum(f.elf, &phnum) == 0) {
    for (size_t i = 0; i < phnum && i < 4096; ++i) {
      GElf_Phdr ph;
      if (gelf_getphdr(f.elf, static_cast<int>(i), &ph) != nullptr && ph.p_type == PT_LOAD) {
        out.loads.push_back({ph.p_vaddr, ph.p_offset, ph.p_filesz});
      }
    }
  }
  Elf_Scn* dynsym = nullptr;
  Elf_Scn* symtab = nullptr;
  Elf_Scn* gnu_hash = nullptr;
  GElf_Shdr dynsym_shdr{}, symtab_shdr{}, hash_shdr{};
  for (Elf_Scn* scn = elf_nextscn(f.elf, nullptr); scn != nullptr; scn = elf_nextscn(f.elf, scn)) {
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) == nullptr) continue;
    if (sh.sh_type == SHT_DYNSYM && dynsym == nullptr) {
      dynsym = scn;
      dynsym_shdr = sh;
    } else if (sh.sh_type == SHT_SYMTAB && symtab == nullptr) {
      symtab = scn;
      symtab_shdr = sh;
    } else if (sh.sh_type == SHT_GNU_HASH && gnu_hash == nullptr) {
      gnu_hash = scn;
      hash_shdr = sh;
    }
  }
  auto scan = [&](Elf_Scn* scn, const GElf_Shdr& sh,
                  const std::optional<std::vector<size_t>>& only) -> std::optional<uint64_t> {
    Elf_Data* d = elf_getdata(scn, nullptr);
    if (d == nullptr || sh.sh_entsize == 0) return std::nullopt;
    const size_t n = std::min<uint64_t>(sh.sh_size / sh.sh_entsize, kMaxSymtabScan);
    auto check = [&](size_t i) -> std::optional<uint64_t> {
      GElf_Sym s;
      if (gelf_getsym(d, static_cast<int>(i), &s) == nullptr) return std::nullopt;
      if (Defined(s) && NameIs(f.elf, sh.sh_link, s, name)) return s.st_value;
      return std::nullopt;
    };
    if (only) {
      for (size_t i : *only) {
        if (i >= n) continue;
        if (std::optional<uint64_t> v = check(i)) return v;
      }
      return std::nullopt;
    }
    for (size_t i = 1; i < n; ++i) {
      if (std::optional<uint64_t> v = check(i)) return v;
    }
    return std::nullopt;
  };
  if (dynsym != nullptr) {
    std::optional<std::vector<size_t>> only;
    if (gnu_hash != nullptr && elf_ndxscn(dynsym) == hash_shdr.sh_link) {
      Elf_Data* h = elf_rawdata(gnu_hash, nullptr);
      if (h != nullptr && h->d_buf != nullptr) {
        const size_t nsyms =
            dynsym_shdr.sh_entsize ? dynsym_shdr.sh_size / dynsym_shdr.sh_entsize : 0;
        only = GnuHashCandidates(
            absl::MakeConstSpan(static_cast<const uint8_t*>(h->d_buf), h->d_size), word, nsyms,
            name);
      }
    }
    if (std::optional<uint64_t> v = scan(dynsym, dynsym_shdr, only)) {
      out.value = *v;
      return out;
    }
  }
  if (symtab != nullptr) {
    if (std::optional<uint64_t> v = scan(symtab, symtab_shdr, std::nullopt)) {
      out.value = *v;
      return out;
    }
  }
  return std::nullopt;
}

absl::StatusOr<uint64_t> LoadBias(const std::vector<ElfLoad>& loads, uint64_t map_start,
                                  uint64_t map_offset) {
  // As unwinder/module.cc's Module::LoadBias: a segment whose page-aligned
  // offset is the mapping's wins over one that merely contains it.
  const ElfLoad* containing = nullptr;
  for (const ElfLoad& s : loads) {
    const uint64_t page_off = s.offset & ~uint64_t{0xfff};
    if (map_offset == page_off) return map_start - (s.vaddr - (s.offset - page_off));
    if (containing == nullptr && map_offset > page_off && map_offset < s.offset + s.filesz) {
      containing = &s;
    }
  }
  if (containing != nullptr) {
    return map_start - (containing->vaddr + (map_offset - containing->offset));
  }
  return absl::NotFoundError(
      absl::StrFormat("no PT_LOAD segment maps file offset 0x%x", map_offset));
}

}  // namespace unwindd::proc::jit
