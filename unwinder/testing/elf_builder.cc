#include "unwinder/testing/elf_builder.h"

#include <elf.h>

#include <cstdlib>
#include <cstring>
#include <fstream>

namespace unwindd::unwinder::testing {
namespace {

template <typename T>
void Put(std::vector<uint8_t>& out, size_t at, const T& v) {
  if (out.size() < at + sizeof(T)) out.resize(at + sizeof(T));
  std::memcpy(out.data() + at, &v, sizeof(T));
}

void PutBytes(std::vector<uint8_t>& out, size_t at, const std::vector<uint8_t>& b) {
  if (out.size() < at + b.size()) out.resize(at + b.size());
  std::copy(b.begin(), b.end(), out.begin() + at);
}

}  // namespace

std::vector<uint8_t> BuildElf(const ElfSpec& spec) {
  constexpr size_t kPhdrs = 2;  // PT_LOAD, PT_NOTE
  constexpr size_t kNoteAt = sizeof(Elf64_Ehdr) + kPhdrs * sizeof(Elf64_Phdr);
  std::vector<uint8_t> out(kFirstSection, 0);

  // The build-id note (name "GNU", type NT_GNU_BUILD_ID).
  std::vector<uint8_t> build_id;
  if (spec.build_id.has_value()) {
    build_id = *spec.build_id;
  } else {
    uint64_t h = 0xcbf29ce484222325;  // FNV-1a over every section
    auto mix = [&h](uint8_t b) { h = (h ^ b) * 0x100000001b3; };
    for (const ElfSection& s : spec.sections) {
      for (char c : s.name) mix(static_cast<uint8_t>(c));
      for (int i = 0; i < 8; ++i) mix(static_cast<uint8_t>(s.addr >> (8 * i)));
      for (uint8_t b : s.bytes) mix(b);
    }
    for (int i = 0; i < 8; ++i) build_id.push_back(static_cast<uint8_t>(h >> (8 * i)));
  }
  std::vector<uint8_t> note;
  if (!build_id.empty()) {
    Elf64_Nhdr n{4, static_cast<Elf64_Word>(build_id.size()), NT_GNU_BUILD_ID};
    Put(note, 0, n);
    PutBytes(note, sizeof(n), {'G', 'N', 'U', 0});
    std::vector<uint8_t> desc = build_id;
    desc.resize((desc.size() + 3) & ~size_t{3}, 0);
    PutBytes(note, sizeof(n) + 4, desc);
  }
  PutBytes(out, kNoteAt, note);

  for (const ElfSection& s : spec.sections) PutBytes(out, s.addr, s.bytes);

  // .shstrtab, then the section headers: null, the note, each section,
  // .shstrtab.
  std::vector<uint8_t> strtab = {0};
  auto name = [&strtab](const std::string& n) {
    const uint32_t at = static_cast<uint32_t>(strtab.size());
    strtab.insert(strtab.end(), n.begin(), n.end());
    strtab.push_back(0);
    return at;
  };
  std::vector<Elf64_Shdr> shdrs(1);
  if (!note.empty()) {
    Elf64_Shdr sh{};
    sh.sh_name = name(".note.gnu.build-id");
    sh.sh_type = SHT_NOTE;
    sh.sh_flags = SHF_ALLOC;
    sh.sh_addr = sh.sh_offset = kNoteAt;
    sh.sh_size = note.size();
    sh.sh_addralign = 4;
    shdrs.push_back(sh);
  }
  for (const ElfSection& s : spec.sections) {
    Elf64_Shdr sh{};
    sh.sh_name = name(s.name);
    sh.sh_type = SHT_PROGBITS;
    sh.sh_flags = SHF_ALLOC | (s.name == ".text" ? SHF_EXECINSTR : 0);
    sh.sh_addr = sh.sh_offset = s.addr;
    sh.sh_size = s.bytes.size();
    sh.sh_addralign = 1;
    shdrs.push_back(sh);
  }
  Elf64_Shdr strsh{};
  strsh.sh_name = name(".shstrtab");
  strsh.sh_type = SHT_STRTAB;
  strsh.sh_offset = out.size();
  strsh.sh_size = strtab.size();
  strsh.sh_addralign = 1;
  shdrs.push_back(strsh);
  PutBytes(out, strsh.sh_offset, strtab);
  const size_t shoff = (out.size() + 7) & ~size_t{7};
  out.resize(shoff, 0);
  for (const Elf64_Shdr& sh : shdrs) Put(out, out.size(), sh);

  Elf64_Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_type = ET_DYN;
  eh.e_machine = arch::GetArchInfo(spec.arch).elf_machine;
  eh.e_version = EV_CURRENT;
  eh.e_phoff = sizeof(Elf64_Ehdr);
  eh.e_shoff = shoff;
  eh.e_ehsize = sizeof(Elf64_Ehdr);
  eh.e_phentsize = sizeof(Elf64_Phdr);
  eh.e_phnum = kPhdrs;
  eh.e_shentsize = sizeof(Elf64_Shdr);
  eh.e_shnum = static_cast<Elf64_Half>(shdrs.size());
  eh.e_shstrndx = static_cast<Elf64_Half>(shdrs.size() - 1);
  Put(out, 0, eh);

  Elf64_Phdr load{};
  load.p_type = PT_LOAD;
  load.p_flags = PF_R | PF_X;
  load.p_filesz = load.p_memsz = out.size();
  load.p_align = 0x1000;
  Put(out, eh.e_phoff, load);
  Elf64_Phdr pnote{};
  pnote.p_type = PT_NOTE;
  pnote.p_flags = PF_R;
  pnote.p_offset = pnote.p_vaddr = kNoteAt;
  pnote.p_filesz = pnote.p_memsz = note.size();
  pnote.p_align = 4;
  Put(out, eh.e_phoff + sizeof(Elf64_Phdr), pnote);
  return out;
}

std::string WriteElf(const ElfSpec& spec, const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  const std::string path = std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
  const std::vector<uint8_t> bytes = BuildElf(spec);
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  return path;
}

}  // namespace unwindd::unwinder::testing
