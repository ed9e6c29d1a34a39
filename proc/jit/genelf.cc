#include "proc/jit/genelf.h"

#include <elf.h>

#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace unwindd::proc::jit {
namespace {

uint64_t Align8(uint64_t v) { return (v + 7) & ~uint64_t{7}; }

// The ELF types of one class.
struct Elf64 {
  using Ehdr = Elf64_Ehdr;
  using Phdr = Elf64_Phdr;
  using Shdr = Elf64_Shdr;
  using Sym = Elf64_Sym;
  static constexpr unsigned char kClass = ELFCLASS64;
  static void SetSymInfo(Sym& s) { s.st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC); }
};
struct Elf32 {
  using Ehdr = Elf32_Ehdr;
  using Phdr = Elf32_Phdr;
  using Shdr = Elf32_Shdr;
  using Sym = Elf32_Sym;
  static constexpr unsigned char kClass = ELFCLASS32;
  static void SetSymInfo(Sym& s) { s.st_info = ELF32_ST_INFO(STB_GLOBAL, STT_FUNC); }
};

template <typename T>
void Put(std::vector<uint8_t>& out, uint64_t at, const T& v) {
  std::memcpy(out.data() + at, &v, sizeof(v));
}

template <typename E>
std::vector<uint8_t> Build(const JitCode& code, uint16_t machine) {
  const bool has_cfi = !code.eh_frame.empty();
  const uint64_t text = kJitTextOffset;
  const uint64_t eh = Align8(text + code.code_size);
  const uint64_t eh_size = code.eh_frame.size();
  const uint64_t hdr = eh + eh_size;
  const uint64_t load_end = has_cfi ? hdr + code.eh_frame_hdr.size() : text + code.code_size;
  // After the loaded part: the symbol and string tables, then the headers.
  const uint64_t symtab = Align8(load_end);
  const uint64_t strtab = symtab + 2 * sizeof(typename E::Sym);
  const std::string strings = std::string(1, '\0') + code.name + std::string(1, '\0');
  static constexpr char kShstr[] =
      "\0.text\0.eh_frame\0.eh_frame_hdr\0.symtab\0.strtab\0.shstrtab";
  enum : uint32_t {
    kNameText = 1, kNameEhFrame = 7, kNameEhFrameHdr = 17, kNameSymtab = 31,
    kNameStrtab = 39, kNameShstrtab = 47
  };
  const uint64_t shstrtab = strtab + strings.size();
  const uint64_t shoff = Align8(shstrtab + sizeof(kShstr));
  // null, .text, [.eh_frame, .eh_frame_hdr,] .symtab, .strtab, .shstrtab
  const uint16_t shnum = has_cfi ? 7 : 5;
  std::vector<uint8_t> out(shoff + shnum * sizeof(typename E::Shdr), 0);

  typename E::Ehdr ehdr{};
  std::memcpy(ehdr.e_ident, ELFMAG, SELFMAG);
  ehdr.e_ident[EI_CLASS] = E::kClass;
  ehdr.e_ident[EI_DATA] = ELFDATA2LSB;
  ehdr.e_ident[EI_VERSION] = EV_CURRENT;
  ehdr.e_type = ET_DYN;
  ehdr.e_machine = machine;
  ehdr.e_version = EV_CURRENT;
  ehdr.e_entry = text;
  ehdr.e_phoff = sizeof(typename E::Ehdr);
  ehdr.e_shoff = shoff;
  ehdr.e_ehsize = sizeof(typename E::Ehdr);
  ehdr.e_phentsize = sizeof(typename E::Phdr);
  ehdr.e_phnum = 1;
  ehdr.e_shentsize = sizeof(typename E::Shdr);
  ehdr.e_shnum = shnum;
  ehdr.e_shstrndx = shnum - 1;
  Put(out, 0, ehdr);

  typename E::Phdr load{};
  load.p_type = PT_LOAD;
  load.p_flags = PF_R | PF_X;
  load.p_filesz = load.p_memsz = load_end;
  load.p_align = 0x1000;
  Put(out, ehdr.e_phoff, load);

  std::memcpy(out.data() + text, code.code.data(), code.code_size);
  if (has_cfi) {
    std::memcpy(out.data() + eh, code.eh_frame.data(), eh_size);
    std::memcpy(out.data() + hdr, code.eh_frame_hdr.data(), code.eh_frame_hdr.size());
  }
  typename E::Sym sym{};
  sym.st_name = 1;
  E::SetSymInfo(sym);
  sym.st_shndx = 1;  // .text
  sym.st_value = text;
  sym.st_size = code.code_size;
  Put(out, symtab + sizeof(typename E::Sym), sym);
  std::memcpy(out.data() + strtab, strings.data(), strings.size());
  std::memcpy(out.data() + shstrtab, kShstr, sizeof(kShstr));

  auto section = [](uint32_t name, uint32_t type, uint64_t flags, uint64_t addr, uint64_t offset,
                    uint64_t size, uint64_t align) {
    typename E::Shdr s{};
    s.sh_name = name;
    s.sh_type = type;
    s.sh_flags = flags;
    s.sh_addr = addr;
    s.sh_offset = offset;
    s.sh_size = size;
    s.sh_addralign = align;
    return s;
  };
  uint64_t at = shoff + sizeof(typename E::Shdr);  // [0] is all zeros
  auto add = [&](const typename E::Shdr& s) {
    Put(out, at, s);
    at += sizeof(typename E::Shdr);
  };
  add(section(kNameText, SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, text, text, code.code_size, 16));
  if (has_cfi) {
    add(section(kNameEhFrame, SHT_PROGBITS, SHF_ALLOC, eh, eh, eh_size, 8));
    add(section(kNameEhFrameHdr, SHT_PROGBITS, SHF_ALLOC, hdr, hdr, code.eh_frame_hdr.size(), 4));
  }
  typename E::Shdr st = section(kNameSymtab, SHT_SYMTAB, 0, 0, symtab,
                                2 * sizeof(typename E::Sym), 8);
  st.sh_link = shnum - 2;  // .strtab
  st.sh_info = 1;          // the first global symbol
  st.sh_entsize = sizeof(typename E::Sym);
  add(st);
  add(section(kNameStrtab, SHT_STRTAB, 0, 0, strtab, strings.size(), 1));
  add(section(kNameShstrtab, SHT_STRTAB, 0, 0, shstrtab, sizeof(kShstr), 1));
  return out;
}

}  // namespace

absl::StatusOr<std::shared_ptr<const std::vector<uint8_t>>> BuildJitElf(const JitCode& code,
                                                                       uint32_t elf_mach) {
  if (code.code.size() != code.code_size || code.code_size > kMaxJitCodeBytes) {
    return absl::InvalidArgumentError("JIT code of an inconsistent size");
  }
  std::vector<uint8_t> image;
  switch (elf_mach) {
    case EM_X86_64:
    case EM_AARCH64:
      image = Build<Elf64>(code, static_cast<uint16_t>(elf_mach));
      break;
    case EM_386:
      image = Build<Elf32>(code, static_cast<uint16_t>(elf_mach));
      break;
    default:
      return absl::InvalidArgumentError(
          absl::StrFormat("jitdump for ELF machine %d, which is not supported", elf_mach));
  }
  return std::make_shared<const std::vector<uint8_t>>(std::move(image));
}

std::string JitModulePath(absl::string_view dir, uint32_t pid, uint64_t code_index) {
  if (dir.empty()) return absl::StrCat("jitted-", pid, "-", code_index, ".so");
  return absl::StrCat(dir, absl::EndsWith(dir, "/") ? "" : "/", "jitted-", pid, "-", code_index,
                      ".so");
}

Mapping JitMapping(const JitCode& code, uint32_t pid, absl::string_view dir) {
  Mapping m;
  m.start = code.code_addr;
  m.end = code.code_addr + code.code_size;
  m.offset = kJitTextOffset;
  m.read = m.exec = true;
  m.path = JitModulePath(dir, pid, code.code_index);
  return m;
}

}  // namespace unwindd::proc::jit
