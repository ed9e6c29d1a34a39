// Test helpers: ELF objects as JIT runtimes register them through the GDB
// JIT interface (ET_REL, section headers patched with load addresses), an
// .eh_frame for them, and the descriptor and entry list in a fake memory.
//
//   SymfileWriter w;                       // ELF64 x86_64 ET_REL
//   size_t text = w.Section(".text", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR,
//                           0x7f0000002000, code);
//   size_t tsym = w.Symbol("", 0, 0, STT_SECTION, text);
//   w.Symbol("fib", 0, 32, STT_FUNC, text);
//   size_t eh = w.Section(".eh_frame", SHT_PROGBITS, SHF_ALLOC, 0x7f0000000008,
//                         EhFrame({{0, 32}}, /*pcrel8=*/false));
//   w.Rela(eh, EhFramePcBeginOffset(0), R_X86_64_PC32, tsym, 0);
//   std::vector<uint8_t> obj = w.Build();
#ifndef UNWINDD_PROC_JIT_TESTING_SYMFILE_WRITER_H_
#define UNWINDD_PROC_JIT_TESTING_SYMFILE_WRITER_H_

#include <elf.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace unwindd::proc::jit::testing {

inline void AppendLe(std::vector<uint8_t>& out, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) out.push_back((v >> (8 * i)) & 0xff);
}

// An ELF object (little-endian), sections in the order added after the
// null one; .symtab, .strtab, the relocation sections and .shstrtab follow.
class SymfileWriter {
 public:
  explicit SymfileWriter(bool is64 = true, uint16_t machine = EM_X86_64,
                         uint16_t type = ET_REL)
      : is64_(is64), machine_(machine), type_(type) {}

  size_t Section(const std::string& name, uint32_t type, uint64_t flags, uint64_t addr,
                 std::vector<uint8_t> bytes, uint64_t nobits_size = 0) {
    sections_.push_back({name, type, flags, addr, std::move(bytes), nobits_size});
    return sections_.size();  // index: the null section is 0
  }
  size_t Symbol(const std::string& name, uint64_t value, uint64_t size, uint8_t type,
                uint16_t shndx, uint8_t bind = STB_GLOBAL) {
    symbols_.push_back({name, value, size, static_cast<uint8_t>((bind << 4) | type), shndx});
    return symbols_.size();  // the null symbol is 0
  }
  // RELA (or, with `rel`, REL with the addend written into the field).
  void Rela(size_t section, uint64_t offset, uint32_t type, uint32_t sym, int64_t addend) {
    relocs_.push_back({section, offset, type, sym, addend});
  }
  void UseRel() { rel_ = true; }

  std::vector<uint8_t> Build() const {
    const int w = is64_ ? 8 : 4;
    std::vector<uint8_t> out(is64_ ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr), 0);
    struct Hdr {
      uint32_t name, type;
      uint64_t flags, addr, offset, size;
      uint32_t link, info;
      uint64_t align, entsize;
    };
    std::vector<Hdr> hdrs(1, Hdr{});
    std::string shstr(1, '\0');
    auto add_name = [&](const std::string& n) {
      const uint32_t at = shstr.size();
      shstr += n;
      shstr += '\0';
      return at;
    };
    auto place = [&](const std::vector<uint8_t>& b) {
      while (out.size() % 8) out.push_back(0);
      const uint64_t at = out.size();
      out.insert(out.end(), b.begin(), b.end());
      return at;
    };
    for (const Sec& s : sections_) {
      std::vector<uint8_t> bytes = s.bytes;
      // REL: the addends go into the fields.
      for (const Rel& r : relocs_) {
        if (!rel_ || r.section != &s - sections_.data() + 1) continue;
        const int width = RelWidth(r.type);
        for (int i = 0; i < width && r.offset + i < bytes.size(); ++i) {
          bytes[r.offset + i] = (static_cast<uint64_t>(r.addend) >> (8 * i)) & 0xff;
        }
      }
      const uint64_t off = s.type == SHT_NOBITS ? out.size() : place(bytes);
      hdrs.push_back({add_name(s.name), s.type, s.flags, s.addr, off,
                      s.type == SHT_NOBITS ? s.nobits_size : bytes.size(), 0, 0, 8, 0});
    }
    // .strtab and .symtab
    std::string str(1, '\0');
    std::vector<uint8_t> syms(is64_ ? sizeof(Elf64_Sym) : sizeof(Elf32_Sym), 0);
    for (const Sym& s : symbols_) {
      const uint32_t name = str.size();
      str += s.name;
      str += '\0';
      AppendLe(syms, name, 4);
      if (is64_) {
        syms.push_back(s.info);
        syms.push_back(0);
        AppendLe(syms, s.shndx, 2);
        AppendLe(syms, s.value, 8);
        AppendLe(syms, s.size, 8);
      } else {
        AppendLe(syms, s.value, 4);
        AppendLe(syms, s.size, 4);
        syms.push_back(s.info);
        syms.push_back(0);
        AppendLe(syms, s.shndx, 2);
      }
    }
    const uint32_t symtab_index = hdrs.size();
    const uint64_t symtab_off = place(syms);
    hdrs.push_back({add_name(".symtab"), SHT_SYMTAB, 0, 0, symtab_off, syms.size(),
                    symtab_index + 1, 1, 8,
                    static_cast<uint64_t>(is64_ ? sizeof(Elf64_Sym) : sizeof(Elf32_Sym))});
    const uint64_t str_off = place(std::vector<uint8_t>(str.begin(), str.end()));
    hdrs.push_back({add_name(".strtab"), SHT_STRTAB, 0, 0, str_off, str.size(), 0, 0, 1, 0});
    // One relocation section per relocated section.
    for (size_t sec = 1; sec <= sections_.size(); ++sec) {
      std::vector<uint8_t> rb;
      for (const Rel& r : relocs_) {
        if (r.section != sec) continue;
        AppendLe(rb, r.offset, w);
        if (is64_) {
          AppendLe(rb, (uint64_t{r.sym} << 32) | r.type, 8);
        } else {
          AppendLe(rb, (r.sym << 8) | (r.type & 0xff), 4);
        }
        if (!rel_) AppendLe(rb, static_cast<uint64_t>(r.addend), w);
      }
      if (rb.empty()) continue;
      const uint64_t off = place(rb);
      const uint64_t ent = rel_ ? 2 * w : 3 * w;
      hdrs.push_back({add_name((rel_ ? ".rel" : ".rela") + sections_[sec - 1].name),
                      static_cast<uint32_t>(rel_ ? SHT_REL : SHT_RELA), SHF_INFO_LINK, 0, off,
                      rb.size(), symtab_index, static_cast<uint32_t>(sec), 8, ent});
    }
    const uint32_t shstr_name = add_name(".shstrtab");
    const uint64_t shstr_off = place(std::vector<uint8_t>(shstr.begin(), shstr.end()));
    hdrs.push_back({shstr_name, SHT_STRTAB, 0, 0, shstr_off, shstr.size(), 0, 0, 1, 0});
    while (out.size() % 8) out.push_back(0);
    const uint64_t shoff = out.size();
    for (const Hdr& h : hdrs) {
      AppendLe(out, h.name, 4);
      AppendLe(out, h.type, 4);
      AppendLe(out, h.flags, w);
      AppendLe(out, h.addr, w);
      AppendLe(out, h.offset, w);
      AppendLe(out, h.size, w);
      AppendLe(out, h.link, 4);
      AppendLe(out, h.info, 4);
      AppendLe(out, h.align, w);
      AppendLe(out, h.entsize, w);
    }
    // The ELF header.
    std::vector<uint8_t> eh;
    eh.insert(eh.end(), {0x7f, 'E', 'L', 'F', static_cast<uint8_t>(is64_ ? 2 : 1), 1, 1, 0});
    eh.resize(EI_NIDENT, 0);
    AppendLe(eh, type_, 2);
    AppendLe(eh, machine_, 2);
    AppendLe(eh, 1, 4);
    AppendLe(eh, 0, w);      // e_entry
    AppendLe(eh, 0, w);      // e_phoff
    AppendLe(eh, shoff, w);  // e_shoff
    AppendLe(eh, 0, 4);      // e_flags
    AppendLe(eh, is64_ ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr), 2);
    AppendLe(eh, 0, 2);  // e_phentsize
    AppendLe(eh, 0, 2);  // e_phnum
    AppendLe(eh, is64_ ? sizeof(Elf64_Shdr) : sizeof(Elf32_Shdr), 2);
    AppendLe(eh, hdrs.size(), 2);
    AppendLe(eh, hdrs.size() - 1, 2);
    std::copy(eh.begin(), eh.end(), out.begin());
    return out;
  }

 private:
  static int RelWidth(uint32_t type) { return type == R_X86_64_64 || type == R_X86_64_PC64 ? 8 : 4; }
  struct Sec {
    std::string name;
    uint32_t type;
    uint64_t flags, addr;
    std::vector<uint8_t> bytes;
    uint64_t nobits_size;
  };
  struct Sym {
    std::string name;
    uint64_t value, size;
    uint8_t info;
    uint16_t shndx;
  };
  struct Rel {
    size_t section;
    uint64_t offset;
    uint32_t type, sym;
    int64_t addend;
  };
  bool is64_;
  uint16_t machine_, type_;
  bool rel_ = false;
  std::vector<Sec> sections_;
  std::vector<Sym> symbols_;
  std::vector<Rel> relocs_;
};

// An .eh_frame: one CIE ("zR", FDE pointers pc-relative, sdata4 or with
// `pcrel8` sdata8; CFA = sp+8, RA at CFA-8 on x86_64) and one FDE per
// function {offset of pc_begin's target, length}: after the first byte,
// CFA = sp+16. pc_begin fields hold `pc_begin_values` (0: unrelocated).
// EhFramePcBeginOffset(i) is where the i-th FDE's pc_begin field is.
inline std::vector<uint8_t> EhFrame(const std::vector<std::pair<int64_t, uint64_t>>& fdes,
                                    bool pcrel8 = false) {
  std::vector<uint8_t> out;
  // CIE: length, id 0, version 1, "zR", code align 1, data align -8, RA 16,
  // aug length 1, FDE encoding; def_cfa r7+8, offset r16 at cfa-8; pad.
  const std::vector<uint8_t> cie = {0, 0, 0, 0, 1, 'z', 'R', 0, 1, 0x78, 16, 1,
                                    static_cast<uint8_t>(pcrel8 ? 0x1c : 0x1b),
                                    0x0c, 7, 8, 0x90, 1, 0, 0};
  AppendLe(out, cie.size(), 4);
  out.insert(out.end(), cie.begin(), cie.end());
  for (const auto& [value, len] : fdes) {
    std::vector<uint8_t> body;
    const uint32_t cie_ptr = out.size() + 4;  // from this FDE's id field
    AppendLe(body, cie_ptr, 4);
    AppendLe(body, static_cast<uint64_t>(value), pcrel8 ? 8 : 4);
    AppendLe(body, len, pcrel8 ? 8 : 4);
    body.push_back(0);     // augmentation length
    body.push_back(0x41);  // DW_CFA_advance_loc 1
    body.push_back(0x0e);  // DW_CFA_def_cfa_offset 16
    body.push_back(16);
    while ((body.size() + 4) % 8) body.push_back(0);  // DW_CFA_nop
    AppendLe(out, body.size(), 4);
    out.insert(out.end(), body.begin(), body.end());
  }
  AppendLe(out, 0, 4);  // terminator
  return out;
}

// Offset of the i-th FDE's pc_begin in EhFrame's output.
inline uint64_t EhFramePcBeginOffset(size_t i, bool pcrel8 = false) {
  const uint64_t cie = 4 + 20;
  const uint64_t body = 4 + 2 * (pcrel8 ? 8 : 4) + 1 + 3;
  const uint64_t fde = 4 + ((body + 4 + 7) / 8 * 8 - 4);
  return cie + i * fde + 8;
}

}  // namespace unwindd::proc::jit::testing

#endif  // UNWINDD_PROC_JIT_TESTING_SYMFILE_WRITER_H_
