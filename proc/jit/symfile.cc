#include "proc/jit/symfile.h"

#include <elf.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <utility>

#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"

namespace unwindd::proc::jit {
namespace {

constexpr uint64_t kPage = 4096;

uint64_t AlignUp(uint64_t v, uint64_t a) { return (v + a - 1) & ~(a - 1); }

// `size` bytes at `addr` in the target, read a MiB at a time so that a
// size the object lies about costs no more memory than the target has
// there. False if any byte is unreadable.
bool ReadTarget(memory::Memory& mem, uint64_t addr, uint64_t size, std::vector<uint8_t>* out) {
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
    if (!mem.ReadFully(addr + at, absl::MakeSpan(out->data() + at, n)).ok()) {
      out->clear();
      return false;
    }
  }
  return true;
}

// Little-endian fields of a byte span, bounds-checked (out of range: 0 and
// false).
class Bytes {
 public:
  explicit Bytes(absl::Span<const uint8_t> s) : s_(s) {}
  bool Has(uint64_t at, uint64_t n) const { return at <= s_.size() && s_.size() - at >= n; }
  uint64_t Le(uint64_t at, int n) const {
    if (!Has(at, n)) return 0;
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= uint64_t{s_[at + i]} << (8 * i);
    return v;
  }
  absl::Span<const uint8_t> span() const { return s_; }

 private:
  absl::Span<const uint8_t> s_;
};

struct Section {
  size_t index = 0;
  absl::string_view name;
  uint32_t type = 0;
  uint64_t flags = 0, addr = 0, offset = 0, size = 0;
  uint32_t link = 0, info = 0;
  uint64_t entsize = 0;
  // The section's bytes in the file (empty for NOBITS or out of range).
  absl::Span<const uint8_t> bytes;
  bool in_file = false;
};

// The parts of an ELF object this file uses (ELF gABI, "ELF Header",
// "Sections", "Symbol Table", "Relocation").
struct Object {
  bool is64 = true;
  uint16_t type = 0, machine = 0;
  std::vector<Section> sections;
};

absl::StatusOr<Object> ParseObject(absl::Span<const uint8_t> file) {
  const Bytes b(file);
  if (!b.Has(0, EI_NIDENT) || std::memcmp(file.data(), ELFMAG, SELFMAG) != 0) {
    return absl::DataLossError("not an ELF object (no ELF magic)");
  }
  Object o;
  const uint8_t cls = file[EI_CLASS];
  if (cls != ELFCLASS32 && cls != ELFCLASS64) {
    return absl::DataLossError(absl::StrFormat("ELF class %d", cls));
  }
  if (file[EI_DATA] != ELFDATA2LSB) {
    return absl::UnimplementedError("big-endian ELF object");
  }
  o.is64 = cls == ELFCLASS64;
  const size_t ehsize = o.is64 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr);
  if (!b.Has(0, ehsize)) return absl::DataLossError("ELF header cut short");
  const int w = o.is64 ? 8 : 4;
  o.type = b.Le(16, 2);
  o.machine = b.Le(18, 2);
  // e_shoff follows e_entry and e_phoff.
  const uint64_t shoff = b.Le(24 + 2 * w, w);
  const uint64_t shentsize = b.Le(24 + 3 * w + 10, 2);
  uint64_t shnum = b.Le(24 + 3 * w + 12, 2);
  uint64_t shstrndx = b.Le(24 + 3 * w + 14, 2);
  const uint64_t shdr_size = o.is64 ? sizeof(Elf64_Shdr) : sizeof(Elf32_Shdr);
  if (shoff == 0) return absl::DataLossError("ELF object without section headers");
  if (shentsize < shdr_size || !b.Has(shoff, shdr_size)) {
    return absl::DataLossError(absl::StrFormat(
        "section headers at 0x%x of %d bytes each do not fit", shoff, shentsize));
  }
  // Extended numbering (gABI): section 0 holds the real count and index.
  auto field = [&](uint64_t i, int off32, int off64, int n32, int n64) {
    const uint64_t at = shoff + i * shentsize;
    return o.is64 ? b.Le(at + off64, n64) : b.Le(at + off32, n32);
  };
  if (shnum == 0) shnum = field(0, 20, 32, 4, 8);  // sh_size
  if (shstrndx == SHN_XINDEX) shstrndx = field(0, 24, 40, 4, 4);  // sh_link
  if (shnum > kMaxSymfileSections) {
    return absl::DataLossError(absl::StrFormat("%d sections (at most %d)", shnum,
                                               kMaxSymfileSections));
  }
  if ((file.size() - shoff) / shentsize < shnum) {
    return absl::DataLossError(absl::StrFormat("%d section headers do not fit", shnum));
  }
  o.sections.resize(shnum);
  for (uint64_t i = 0; i < shnum; ++i) {
    Section& s = o.sections[i];
    s.index = i;
    s.type = field(i, 4, 4, 4, 4);
    s.flags = field(i, 8, 8, 4, 8);
    s.addr = field(i, 12, 16, 4, 8);
    s.offset = field(i, 16, 24, 4, 8);
    s.size = field(i, 20, 32, 4, 8);
    s.link = field(i, 24, 40, 4, 4);
    s.info = field(i, 28, 44, 4, 4);
    s.entsize = field(i, 36, 56, 4, 8);
    if (s.type != SHT_NOBITS && s.type != SHT_NULL && b.Has(s.offset, s.size)) {
      s.bytes = file.subspan(s.offset, s.size);
      s.in_file = true;
    }
  }
  if (shstrndx < shnum && o.sections[shstrndx].in_file) {
    const absl::Span<const uint8_t> strs = o.sections[shstrndx].bytes;
    for (Section& s : o.sections) {
      const uint64_t at = field(s.index, 0, 0, 4, 4);
      if (at >= strs.size()) continue;
      const void* nul = std::memchr(strs.data() + at, 0, strs.size() - at);
      if (nul == nullptr) continue;
      s.name = absl::string_view(reinterpret_cast<const char*>(strs.data() + at),
                                 static_cast<const uint8_t*>(nul) - (strs.data() + at));
    }
  }
  return o;
}

// A symbol table and its strings.
class Symbols {
 public:
  Symbols(const Object& o, const Section* symtab) : o_(o) {
    if (symtab == nullptr || !symtab->in_file) return;
    syms_ = symtab->bytes;
    entsize_ = o.is64 ? sizeof(Elf64_Sym) : sizeof(Elf32_Sym);
    if (symtab->link < o.sections.size() && o.sections[symtab->link].in_file) {
      strs_ = o.sections[symtab->link].bytes;
    }
  }
  size_t count() const { return syms_.size() / entsize_; }

  struct Sym {
    uint32_t name = 0;
    uint8_t info = 0;
    uint16_t shndx = 0;
    uint64_t value = 0, size = 0;
  };
  Sym Get(size_t i) const {
    const Bytes b(syms_);
    const uint64_t at = i * entsize_;
    Sym s;
    s.name = b.Le(at, 4);
    if (o_.is64) {
      s.info = b.Le(at + 4, 1);
      s.shndx = b.Le(at + 6, 2);
      s.value = b.Le(at + 8, 8);
      s.size = b.Le(at + 16, 8);
    } else {
      s.value = b.Le(at + 4, 4);
      s.size = b.Le(at + 8, 4);
      s.info = b.Le(at + 12, 1);
      s.shndx = b.Le(at + 14, 2);
    }
    return s;
  }
  absl::string_view Name(const Sym& s) const {
    if (s.name >= strs_.size()) return {};
    const void* nul = std::memchr(strs_.data() + s.name, 0, strs_.size() - s.name);
    if (nul == nullptr) return {};
    return absl::string_view(reinterpret_cast<const char*>(strs_.data() + s.name),
                             static_cast<const uint8_t*>(nul) - (strs_.data() + s.name));
  }
  // The symbol's target address: in an ET_REL object, its section's load
  // address plus st_value. Undefined or unplaced symbols have none.
  std::optional<uint64_t> Address(const Sym& s) const {
    if (s.shndx == SHN_ABS) return s.value;
    if (s.shndx == SHN_UNDEF || s.shndx >= o_.sections.size()) return std::nullopt;
    if (o_.type != ET_REL) return s.value;
    const Section& sec = o_.sections[s.shndx];
    if ((sec.flags & SHF_ALLOC) == 0 || sec.addr == 0) return std::nullopt;
    return sec.addr + s.value;
  }

 private:
  const Object& o_;
  absl::Span<const uint8_t> syms_, strs_;
  size_t entsize_ = sizeof(Elf64_Sym);
};

struct Reloc {
  uint64_t offset = 0;
  uint32_t type = 0;
  uint32_t sym = 0;
  int64_t addend = 0;
  bool has_addend = false;  // RELA; REL's addend is the field's contents
};

// The relocation's field width and whether it is pc-relative; nullopt for
// a type not known here (psABIs of x86_64, i386 and AArch64).
struct RelocKind {
  int width;
  bool pcrel;
  bool is_signed;
  bool none = false;
};
std::optional<RelocKind> KindOf(uint16_t machine, uint32_t type) {
  switch (machine) {
    case EM_X86_64:
      switch (type) {
        case R_X86_64_NONE: return RelocKind{0, false, false, true};
        case R_X86_64_64: return RelocKind{8, false, false};
        case R_X86_64_PC32: return RelocKind{4, true, true};
        case R_X86_64_32: return RelocKind{4, false, false};
        case R_X86_64_32S: return RelocKind{4, false, true};
        case R_X86_64_PC64: return RelocKind{8, true, true};
      }
      break;
    case EM_386:
      switch (type) {
        case R_386_NONE: return RelocKind{0, false, false, true};
        case R_386_32: return RelocKind{4, false, false};
        case R_386_PC32: return RelocKind{4, true, true};
      }
      break;
    case EM_AARCH64:
      switch (type) {
        case R_AARCH64_NONE:
        case 256:  // R_AARCH64_NONE (the withdrawn number)
          return RelocKind{0, false, false, true};
        case R_AARCH64_ABS64: return RelocKind{8, false, false};
        case R_AARCH64_ABS32: return RelocKind{4, false, true};
        case R_AARCH64_PREL64: return RelocKind{8, true, true};
        case R_AARCH64_PREL32: return RelocKind{4, true, true};
      }
      break;
  }
  return std::nullopt;
}

std::vector<Reloc> ReadRelocs(const Object& o, const Section& rs) {
  std::vector<Reloc> out;
  const bool rela = rs.type == SHT_RELA;
  const size_t ent = o.is64 ? (rela ? sizeof(Elf64_Rela) : sizeof(Elf64_Rel))
                            : (rela ? sizeof(Elf32_Rela) : sizeof(Elf32_Rel));
  const Bytes b(rs.bytes);
  const size_t n = std::min(rs.bytes.size() / ent, kMaxSymfileRelocations);
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const uint64_t at = i * ent;
    Reloc r;
    r.has_addend = rela;
    if (o.is64) {
      r.offset = b.Le(at, 8);
      const uint64_t info = b.Le(at + 8, 8);
      r.type = ELF64_R_TYPE(info);
      r.sym = ELF64_R_SYM(info);
      if (rela) r.addend = static_cast<int64_t>(b.Le(at + 16, 8));
    } else {
      r.offset = b.Le(at, 4);
      const uint32_t info = b.Le(at + 4, 4);
      r.type = ELF32_R_TYPE(info);
      r.sym = ELF32_R_SYM(info);
      if (rela) r.addend = static_cast<int32_t>(b.Le(at + 8, 4));
    }
    out.push_back(r);
  }
  return out;
}

void PutLe(std::vector<uint8_t>& out, uint64_t at, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) out[at + i] = (v >> (8 * i)) & 0xff;
}

// `eh` (the file's .eh_frame bytes) with `relocs` applied for the section
// placed at `place`; an error names the first relocation that cannot be.
absl::StatusOr<std::vector<uint8_t>> Relocate(const Object& o, const Symbols& syms,
                                              absl::Span<const uint8_t> eh, uint64_t place,
                                              const std::vector<Reloc>& relocs) {
  std::vector<uint8_t> out(eh.begin(), eh.end());
  const Bytes in(eh);
  for (const Reloc& r : relocs) {
    const std::optional<RelocKind> k = KindOf(o.machine, r.type);
    if (!k) return absl::UnimplementedError(absl::StrFormat("relocation type %d", r.type));
    if (k->none) continue;
    if (!in.Has(r.offset, k->width)) {
      return absl::DataLossError(absl::StrFormat("relocation at 0x%x outside .eh_frame", r.offset));
    }
    if (r.sym >= syms.count()) {
      return absl::DataLossError(absl::StrFormat("relocation names symbol %d of %d", r.sym,
                                                 syms.count()));
    }
    const std::optional<uint64_t> s = syms.Address(syms.Get(r.sym));
    if (!s) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "relocation at 0x%x names undefined symbol %d", r.offset, r.sym));
    }
    int64_t addend = r.addend;
    if (!r.has_addend) {
      const uint64_t raw = in.Le(r.offset, k->width);
      addend = k->width == 4 ? static_cast<int32_t>(raw) : static_cast<int64_t>(raw);
    }
    // Wrapping arithmetic is what the psABIs define; a value that does not
    // fit a 4-byte field is an overflow the linker would refuse.
    uint64_t v = *s + static_cast<uint64_t>(addend);
    if (k->pcrel) v -= place + r.offset;
    if (k->width == 4) {
      const int64_t sv = static_cast<int64_t>(v);
      const bool fits = k->is_signed ? (sv >= INT32_MIN && sv <= INT32_MAX)
                                     : (v <= UINT32_MAX);
      if (!fits) {
        return absl::OutOfRangeError(
            absl::StrFormat("relocation at 0x%x overflows its 4 bytes", r.offset));
      }
    }
    PutLe(out, r.offset, v, k->width);
  }
  return out;
}

// Whether `live` is `file` relocated: equal outside the relocated fields.
bool AgreesOutsideRelocs(absl::Span<const uint8_t> live, absl::Span<const uint8_t> file,
                         uint16_t machine, const std::vector<Reloc>& relocs) {
  if (live.size() != file.size()) return false;
  std::vector<bool> relocated(file.size(), false);
  for (const Reloc& r : relocs) {
    const std::optional<RelocKind> k = KindOf(machine, r.type);
    const int width = k ? k->width : 8;
    for (int i = 0; i < width && r.offset + i < file.size(); ++i) {
      if (r.offset + i >= r.offset) relocated[r.offset + i] = true;
    }
  }
  for (size_t i = 0; i < file.size(); ++i) {
    if (!relocated[i] && live[i] != file[i]) return false;
  }
  return true;
}

struct CodeSection {
  const Section* s;
  std::vector<uint8_t> bytes;  // the code
  uint64_t file_off = 0;       // in the image
};

template <typename T>
void Put(std::vector<uint8_t>& out, uint64_t at, const T& v) {
  std::memcpy(out.data() + at, &v, sizeof(v));
}

// The image (see the header): code sections at their load addresses, the
// .eh_frame at `eh_addr`.
template <typename Ehdr, typename Phdr, typename Shdr>
std::vector<uint8_t> BuildImage(uint16_t machine, uint8_t cls, std::vector<CodeSection>& code,
                                absl::Span<const uint8_t> eh,
                                uint64_t eh_addr) {
  static constexpr char kShstr[] = "\0.text\0.eh_frame\0.shstrtab";
  enum : uint32_t { kNameText = 1, kNameEhFrame = 7, kNameShstrtab = 17 };
  const uint64_t phoff = sizeof(Ehdr);
  uint64_t at = AlignUp(phoff + code.size() * sizeof(Phdr), kPage);
  for (CodeSection& c : code) {
    c.file_off = at;
    at = AlignUp(at + c.s->size, kPage);
  }
  const uint64_t eh_off = at;
  const uint64_t shstr_off = eh_off + eh.size();
  const uint64_t shoff = AlignUp(shstr_off + sizeof(kShstr), 8);
  const bool has_eh = !eh.empty();
  const uint64_t shnum = 1 + code.size() + (has_eh ? 1 : 0) + 1;
  std::vector<uint8_t> out(shoff + shnum * sizeof(Shdr), 0);

  Ehdr ehdr{};
  std::memcpy(ehdr.e_ident, ELFMAG, SELFMAG);
  ehdr.e_ident[EI_CLASS] = cls;
  ehdr.e_ident[EI_DATA] = ELFDATA2LSB;
  ehdr.e_ident[EI_VERSION] = EV_CURRENT;
  ehdr.e_type = ET_DYN;
  ehdr.e_machine = machine;
  ehdr.e_version = EV_CURRENT;
  ehdr.e_phoff = phoff;
  ehdr.e_shoff = shoff;
  ehdr.e_ehsize = sizeof(Ehdr);
  ehdr.e_phentsize = sizeof(Phdr);
  ehdr.e_phnum = code.size();
  ehdr.e_shentsize = sizeof(Shdr);
  ehdr.e_shnum = shnum;
  ehdr.e_shstrndx = shnum - 1;
  Put(out, 0, ehdr);

  uint64_t sh = shoff + sizeof(Shdr);
  auto add = [&](uint32_t name, uint32_t type, uint64_t flags, uint64_t addr, uint64_t off,
                 uint64_t size, uint64_t align) {
    Shdr s{};
    s.sh_name = name;
    s.sh_type = type;
    s.sh_flags = flags;
    s.sh_addr = addr;
    s.sh_offset = off;
    s.sh_size = size;
    s.sh_addralign = align;
    Put(out, sh, s);
    sh += sizeof(Shdr);
  };
  for (size_t i = 0; i < code.size(); ++i) {
    const Section& s = *code[i].s;
    Phdr p{};
    p.p_type = PT_LOAD;
    p.p_flags = PF_R | PF_X;
    p.p_offset = code[i].file_off;
    p.p_vaddr = p.p_paddr = s.addr;
    p.p_filesz = p.p_memsz = s.size;
    p.p_align = 1;
    Put(out, phoff + i * sizeof(Phdr), p);
    std::copy(code[i].bytes.begin(), code[i].bytes.end(), out.begin() + code[i].file_off);
    add(kNameText, SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, s.addr, code[i].file_off, s.size, 1);
  }
  if (has_eh) {
    std::copy(eh.begin(), eh.end(), out.begin() + eh_off);
    add(kNameEhFrame, SHT_PROGBITS, SHF_ALLOC, eh_addr, eh_off, eh.size(), 1);
  }
  std::memcpy(out.data() + shstr_off, kShstr, sizeof(kShstr));
  add(kNameShstrtab, SHT_STRTAB, 0, 0, shstr_off, sizeof(kShstr), 1);
  return out;
}

}  // namespace

const char* EhFrameSourceName(EhFrameSource s) {
  switch (s) {
    case EhFrameSource::kNone: return "none";
    case EhFrameSource::kRelocated: return "relocated";
    case EhFrameSource::kLive: return "live";
    case EhFrameSource::kFile: return "file";
  }
  return "?";
}

std::string SymfileModulePath(uint64_t symfile_addr) {
  return absl::StrFormat("jit-symfile-0x%x", symfile_addr);
}

absl::StatusOr<SymfileCode> SymfileRegions(absl::Span<const uint8_t> symfile,
                                           uint64_t symfile_addr, memory::Memory& mem) {
  absl::StatusOr<Object> parsed = ParseObject(symfile);
  if (!parsed.ok()) return parsed.status();
  const Object& o = *parsed;
  if (o.machine != EM_X86_64 && o.machine != EM_AARCH64 && o.machine != EM_386) {
    return absl::UnimplementedError(absl::StrFormat("ELF machine %d", o.machine));
  }
  const uint64_t addr_max = o.is64 ? UINT64_MAX : UINT32_MAX;

  // The executable sections with a load address, in address order, without
  // overlaps (a hostile object's second claim on an address is dropped).
  std::vector<CodeSection> code;
  uint64_t code_bytes = 0;
  std::vector<const Section*> cands;
  for (const Section& s : o.sections) {
    if ((s.flags & SHF_ALLOC) && (s.flags & SHF_EXECINSTR) && s.size > 0 && s.addr != 0 &&
        s.size <= addr_max - s.addr) {
      cands.push_back(&s);
    }
  }
  std::sort(cands.begin(), cands.end(),
            [](const Section* a, const Section* b) { return a->addr < b->addr; });
  for (const Section* s : cands) {
    if (code.size() >= kMaxSymfileCodeSections || s->size > kMaxSymfileCodeBytes - code_bytes) {
      break;
    }
    if (!code.empty() && s->addr < code.back().s->addr + code.back().s->size) continue;
    // The code as the target has it (relocated), else the file's; code
    // that is in neither is no code of ours.
    CodeSection c{s};
    if (!ReadTarget(mem, s->addr, s->size, &c.bytes)) {
      if (!s->in_file) continue;
      c.bytes.assign(s->bytes.begin(), s->bytes.end());
    }
    code.push_back(std::move(c));
    code_bytes += s->size;
  }
  if (code.empty()) {
    return absl::NotFoundError("no executable section with a load address and code");
  }

  SymfileCode result;
  const Section* symtab = nullptr;
  const Section* eh = nullptr;
  for (const Section& s : o.sections) {
    if (s.type == SHT_SYMTAB && symtab == nullptr) symtab = &s;
    if (s.name == ".eh_frame" && eh == nullptr) eh = &s;
  }
  const Symbols syms(o, symtab);

  // The .eh_frame, made right for its load address.
  std::vector<uint8_t> eh_bytes;
  uint64_t eh_addr = 0;
  if (eh != nullptr && eh->size > 0 && eh->size <= kMaxSymfileCodeBytes) {
    // Unplaced (sh_addr 0): after the code, where the relocations put it.
    eh_addr = eh->addr;
    if (eh_addr == 0) {
      const CodeSection& last = code.back();
      eh_addr = AlignUp(last.s->addr + last.s->size, 8);
    }
    std::vector<Reloc> relocs;
    for (const Section& s : o.sections) {
      if ((s.type == SHT_RELA || s.type == SHT_REL) && s.info == eh->index && s.in_file) {
        std::vector<Reloc> r = ReadRelocs(o, s);
        relocs.insert(relocs.end(), r.begin(), r.end());
        if (relocs.size() > kMaxSymfileRelocations) relocs.resize(kMaxSymfileRelocations);
      }
    }
    if (eh_addr > addr_max - eh->size) {
      result.eh_frame_problem = ".eh_frame's address does not fit";
    } else if (relocs.empty() && eh->in_file) {
      eh_bytes.assign(eh->bytes.begin(), eh->bytes.end());
      result.eh_frame = EhFrameSource::kFile;
    } else if (eh->in_file) {
      absl::StatusOr<std::vector<uint8_t>> r = Relocate(o, syms, eh->bytes, eh_addr, relocs);
      if (r.ok()) {
        eh_bytes = *std::move(r);
        result.eh_frame = EhFrameSource::kRelocated;
      } else {
        // The JIT linker resolved what the object alone cannot: its copy
        // at the load address, if it is this section's.
        std::vector<uint8_t> live;
        if (eh->addr != 0 && ReadTarget(mem, eh->addr, eh->size, &live) &&
            AgreesOutsideRelocs(live, eh->bytes, o.machine, relocs)) {
          eh_bytes = std::move(live);
          result.eh_frame = EhFrameSource::kLive;
        } else {
          result.eh_frame_problem = absl::StrFormat(
              ".eh_frame relocations: %s; its copy at 0x%x is not readable or not the same",
              r.status().message(), eh->addr);
        }
      }
    } else if (eh->addr != 0) {
      // Not in the file (NOBITS, cut short): the target's copy as it is.
      std::vector<uint8_t> live;
      if (ReadTarget(mem, eh->addr, eh->size, &live)) {
        eh_bytes = std::move(live);
        result.eh_frame = EhFrameSource::kLive;
      } else {
        result.eh_frame_problem = ".eh_frame is neither in the object nor readable at its address";
      }
    } else {
      result.eh_frame_problem = ".eh_frame is not in the object";
    }
  }

  std::vector<uint8_t> image =
      o.is64 ? BuildImage<Elf64_Ehdr, Elf64_Phdr, Elf64_Shdr>(o.machine, ELFCLASS64, code, eh_bytes,
                                                              eh_addr)
             : BuildImage<Elf32_Ehdr, Elf32_Phdr, Elf32_Shdr>(o.machine, ELFCLASS32, code, eh_bytes,
                                                              eh_addr);
  auto elf = std::make_shared<const std::vector<uint8_t>>(std::move(image));

  // Function symbols in the code: [start, end) -> name, the first symbol
  // of an address winning.
  std::map<uint64_t, std::pair<uint64_t, absl::string_view>> funcs;
  const size_t nsyms = syms.count();
  for (size_t i = 1; i < nsyms && funcs.size() < kMaxSymfileNamedFunctions; ++i) {
    const Symbols::Sym s = syms.Get(i);
    if (ELF64_ST_TYPE(s.info) != STT_FUNC) continue;
    const std::optional<uint64_t> a = syms.Address(s);
    if (!a) continue;
    funcs.emplace(*a, std::make_pair(s.size, syms.Name(s)));
  }

  const std::string path = SymfileModulePath(symfile_addr);
  std::map<absl::string_view, std::shared_ptr<const CodeImage>> images;
  auto image_named = [&](absl::string_view name) {
    std::shared_ptr<const CodeImage>& ci = images[name];
    if (ci == nullptr) ci = std::make_shared<const CodeImage>(CodeImage{elf, std::string(name)});
    return ci;
  };
  auto add_region = [&](const CodeSection& c, uint64_t start, uint64_t end,
                        absl::string_view name) {
    if (start >= end) return;
    JitRegion r;
    r.mapping.start = start;
    r.mapping.end = end;
    r.mapping.offset = c.file_off + (start - c.s->addr);
    r.mapping.read = r.mapping.exec = true;
    r.mapping.path = path;
    r.code = image_named(name);
    result.regions.push_back(std::move(r));
  };
  for (const CodeSection& c : code) {
    const uint64_t lo = c.s->addr, hi = c.s->addr + c.s->size;
    uint64_t at = lo;
    for (auto it = funcs.lower_bound(lo); it != funcs.end() && it->first < hi; ++it) {
      if (it->first < at) continue;  // inside the previous function
      add_region(c, at, it->first, "");
      auto next = std::next(it);
      uint64_t end = it->second.first == 0 || it->second.first > hi - it->first
                         ? hi
                         : it->first + it->second.first;
      // A size-less symbol runs to the next one.
      if (it->second.first == 0 && next != funcs.end() && next->first < hi) end = next->first;
      add_region(c, it->first, end, it->second.second);
      at = end;
    }
    add_region(c, at, hi, "");
  }
  return result;
}

}  // namespace unwindd::proc::jit
