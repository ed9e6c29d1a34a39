#include "proc/core_elf.h"

#include <elf.h>

#include <algorithm>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "proc/core_notes.h"

namespace unwindd::proc {
namespace {

// Bounds on what is read from a possibly hostile image.
constexpr uint64_t kMaxNoteBytes = 64 * 1024;
constexpr uint64_t kMaxDynamicEntries = 4096;
constexpr size_t kMaxBuildIdBytes = 64;

uint64_t Le(const uint8_t* p, int size) {
  uint64_t v = 0;
  for (int i = size - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

bool CheckedAdd(uint64_t a, uint64_t b, uint64_t* out) {
  return !__builtin_add_overflow(a, b, out);
}

absl::Status Unreadable(absl::Status s, absl::string_view what, uint64_t addr) {
  return absl::Status(
      s.code(), absl::StrFormat("%s at 0x%x: %s", what, addr, s.message()));
}

ElfPhdr ParsePhdr(const uint8_t* p, uint8_t elf_class) {
  ElfPhdr h;
  if (elf_class == ELFCLASS64) {  // Elf64_Phdr
    h.type = static_cast<uint32_t>(Le(p, 4));
    h.flags = static_cast<uint32_t>(Le(p + 4, 4));
    h.offset = Le(p + 8, 8);
    h.vaddr = Le(p + 16, 8);
    h.filesz = Le(p + 32, 8);
    h.memsz = Le(p + 40, 8);
    h.align = Le(p + 48, 8);
  } else {  // Elf32_Phdr: p_flags comes after p_memsz
    h.type = static_cast<uint32_t>(Le(p, 4));
    h.offset = Le(p + 4, 4);
    h.vaddr = Le(p + 8, 4);
    h.filesz = Le(p + 16, 4);
    h.memsz = Le(p + 20, 4);
    h.flags = static_cast<uint32_t>(Le(p + 24, 4));
    h.align = Le(p + 28, 4);
  }
  return h;
}

// load_bias from the PT_LOAD that maps the lowest file offset (normally 0,
// the page with the ELF header): base = p_vaddr - p_offset + bias.
void ComputeLoadBias(ElfImage& img) {
  const ElfPhdr* first = nullptr;
  for (const ElfPhdr& p : img.phdrs) {
    if (p.type == PT_LOAD && (first == nullptr || p.offset < first->offset)) {
      first = &p;
    }
  }
  if (first != nullptr)
    img.load_bias = img.base - (first->vaddr - first->offset);
}

}  // namespace

absl::StatusOr<std::vector<ElfPhdr>> ReadPhdrs(memory::Memory& mem,
                                               uint64_t addr, uint64_t count,
                                               uint8_t elf_class) {
  const uint64_t entsize = elf_class == ELFCLASS64 ? 56 : 32;
  if (count > (uint64_t{1} << 24)) {
    return absl::DataLossError(absl::StrFormat("%d program headers", count));
  }
  uint64_t end;
  if (!CheckedAdd(addr, count * entsize, &end)) {
    return absl::DataLossError(absl::StrFormat(
        "program headers at 0x%x wrap the address space", addr));
  }
  std::vector<uint8_t> bytes(count * entsize);
  absl::Status s = mem.ReadFully(addr, absl::MakeSpan(bytes));
  if (!s.ok()) return Unreadable(s, "program headers", addr);
  std::vector<ElfPhdr> out;
  out.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    out.push_back(ParsePhdr(bytes.data() + i * entsize, elf_class));
  }
  return out;
}

absl::StatusOr<ElfImage> ReadElfImage(memory::Memory& mem, uint64_t base,
                                      ElfView view, uint64_t max_phdrs) {
  uint8_t h[64] = {};
  size_t got = 0;
  while (got < sizeof(h)) {
    size_t n = mem.Read(base + got, absl::MakeSpan(h + got, sizeof(h) - got));
    if (n == 0) break;
    got += n;
  }
  if (got < SELFMAG || std::memcmp(h, ELFMAG, SELFMAG) != 0) {
    if (got == 0) {
      return absl::OutOfRangeError(
          absl::StrFormat("cannot read an ELF header at 0x%x", base));
    }
    return absl::DataLossError(absl::StrFormat("no ELF header at 0x%x", base));
  }
  ElfImage img;
  img.base = base;
  img.elf_class = h[EI_CLASS];
  if (img.elf_class != ELFCLASS32 && img.elf_class != ELFCLASS64) {
    return absl::DataLossError(absl::StrFormat(
        "ELF header at 0x%x: bad class %d", base, img.elf_class));
  }
  if (h[EI_DATA] != ELFDATA2LSB) {
    return absl::UnimplementedError(
        absl::StrFormat("ELF image at 0x%x is not little-endian", base));
  }
  const bool is64 = img.elf_class == ELFCLASS64;
  if (got < (is64 ? 64u : 52u)) {
    return absl::OutOfRangeError(
        absl::StrFormat("ELF header at 0x%x is cut short", base));
  }
  img.type = static_cast<uint16_t>(Le(h + 16, 2));
  img.machine = static_cast<uint16_t>(Le(h + 18, 2));
  img.entry = Le(h + 24, is64 ? 8 : 4);
  const uint64_t phoff = Le(h + (is64 ? 32 : 28), is64 ? 8 : 4);
  img.shoff = Le(h + (is64 ? 40 : 32), is64 ? 8 : 4);
  const uint64_t phentsize = Le(h + (is64 ? 54 : 42), 2);
  uint64_t phnum = Le(h + (is64 ? 56 : 44), 2);
  img.shnum = static_cast<uint16_t>(Le(h + (is64 ? 60 : 48), 2));
  if (phnum != 0 && phentsize != (is64 ? 56u : 32u)) {
    return absl::DataLossError(
        absl::StrFormat("ELF header at 0x%x: e_phentsize %d", base, phentsize));
  }
  // gABI: PN_XNUM means the real count is in section header 0's sh_info.
  if (phnum == PN_XNUM && max_phdrs > PN_XNUM) {
    uint64_t sh0;
    uint8_t sh[64];
    const uint64_t shsize = is64 ? 64 : 40;
    if (!CheckedAdd(base, img.shoff, &sh0) ||
        !mem.ReadFully(sh0, absl::MakeSpan(sh, shsize)).ok()) {
      return absl::DataLossError(absl::StrFormat(
          "ELF header at 0x%x: PN_XNUM without a readable section header 0",
          base));
    }
    phnum = Le(sh + (is64 ? 44 : 28), 4);
  }
  if (phnum > max_phdrs) {
    return absl::DataLossError(
        absl::StrFormat("ELF header at 0x%x: %d program headers, more than %d",
                        base, phnum, max_phdrs));
  }
  uint64_t phaddr;
  if (!CheckedAdd(base, phoff, &phaddr)) {
    return absl::DataLossError(absl::StrFormat(
        "ELF header at 0x%x: e_phoff 0x%x overflows", base, phoff));
  }
  absl::StatusOr<std::vector<ElfPhdr>> phdrs =
      ReadPhdrs(mem, phaddr, phnum, img.elf_class);
  if (!phdrs.ok()) return phdrs.status();
  img.phdrs = *std::move(phdrs);
  if (view == ElfView::kLoaded) ComputeLoadBias(img);
  return img;
}

absl::StatusOr<ElfImage> ElfImageFromPhdrs(memory::Memory& mem,
                                           uint64_t phdr_addr, uint64_t phnum,
                                           uint8_t elf_class) {
  if (phnum > kMaxImagePhdrs) {
    return absl::DataLossError(absl::StrFormat("AT_PHNUM %d", phnum));
  }
  absl::StatusOr<std::vector<ElfPhdr>> phdrs =
      ReadPhdrs(mem, phdr_addr, phnum, elf_class);
  if (!phdrs.ok()) return phdrs.status();
  const ElfPhdr* pt_phdr = nullptr;
  const ElfPhdr* first_load = nullptr;
  for (const ElfPhdr& p : *phdrs) {
    if (p.type == PT_PHDR) pt_phdr = &p;
    if (p.type == PT_LOAD &&
        (first_load == nullptr || p.offset < first_load->offset)) {
      first_load = &p;
    }
  }
  if (pt_phdr == nullptr || first_load == nullptr) {
    return absl::NotFoundError(absl::StrFormat(
        "program headers at 0x%x have no PT_PHDR to place them", phdr_addr));
  }
  const uint64_t bias = phdr_addr - pt_phdr->vaddr;
  const uint64_t base = bias + first_load->vaddr - first_load->offset;
  // The full header, when that page was dumped, also gives e_type/e_entry.
  absl::StatusOr<ElfImage> full = ReadElfImage(mem, base, ElfView::kLoaded);
  if (full.ok() && full->load_bias == bias) return full;
  ElfImage img;
  img.base = base;
  img.elf_class = elf_class;
  img.phdrs = *std::move(phdrs);
  img.load_bias = bias;
  return img;
}

absl::StatusOr<std::string> ReadBuildId(memory::Memory& mem,
                                        const ElfImage& image, ElfView view) {
  for (const ElfPhdr& p : image.phdrs) {
    if (p.type != PT_NOTE) continue;
    uint64_t addr;
    if (!CheckedAdd(view == ElfView::kLoaded ? image.load_bias : image.base,
                    view == ElfView::kLoaded ? p.vaddr : p.offset, &addr)) {
      continue;
    }
    std::vector<uint8_t> bytes(std::min(p.filesz, kMaxNoteBytes));
    if (!mem.ReadFully(addr, absl::MakeSpan(bytes)).ok()) continue;
    ParsedNotes notes = ParseNotes(bytes, addr, p.align);
    for (const CoreNote& n : notes.notes) {
      if (n.type != NT_GNU_BUILD_ID || n.name != "GNU" || n.desc.empty())
        continue;
      std::string hex;
      for (uint8_t b :
           n.desc.first(std::min(n.desc.size(), kMaxBuildIdBytes))) {
        absl::StrAppendFormat(&hex, "%02x", b);
      }
      return hex;
    }
  }
  return absl::NotFoundError(absl::StrFormat(
      "no readable build-id note in the image at 0x%x", image.base));
}

absl::StatusOr<std::vector<std::pair<int64_t, uint64_t>>> ReadDynamic(
    memory::Memory& mem, const ElfImage& image) {
  const int w = image.word_size();
  for (const ElfPhdr& p : image.phdrs) {
    if (p.type != PT_DYNAMIC) continue;
    const uint64_t addr = image.load_bias + p.vaddr;
    const uint64_t count = std::min(p.memsz / (2 * w), kMaxDynamicEntries);
    std::vector<uint8_t> bytes(count * 2 * w);
    absl::Status s = mem.ReadFully(addr, absl::MakeSpan(bytes));
    if (!s.ok()) return Unreadable(s, "dynamic section", addr);
    std::vector<std::pair<int64_t, uint64_t>> out;
    for (uint64_t i = 0; i < count; ++i) {
      const uint8_t* e = bytes.data() + i * 2 * w;
      int64_t tag = w == 8 ? static_cast<int64_t>(Le(e, 8))
                           : static_cast<int32_t>(Le(e, 4));
      if (tag == DT_NULL) break;
      out.emplace_back(tag, Le(e + w, w));
    }
    return out;
  }
  return absl::NotFoundError(
      absl::StrFormat("the image at 0x%x has no PT_DYNAMIC", image.base));
}

absl::StatusOr<std::string> ReadCString(memory::Memory& mem, uint64_t addr,
                                        size_t max_len) {
  std::string out;
  uint8_t chunk[256];
  while (out.size() < max_len) {
    size_t want = std::min(sizeof(chunk), max_len - out.size());
    size_t n = mem.Read(addr + out.size(), absl::MakeSpan(chunk, want));
    if (n == 0) {
      return absl::OutOfRangeError(
          absl::StrFormat("cannot read string at 0x%x", addr + out.size()));
    }
    const uint8_t* nul = static_cast<const uint8_t*>(std::memchr(chunk, 0, n));
    if (nul != nullptr) {
      out.append(reinterpret_cast<const char*>(chunk), nul - chunk);
      return out;
    }
    out.append(reinterpret_cast<const char*>(chunk), n);
  }
  return absl::DataLossError(
      absl::StrFormat("string at 0x%x is longer than %d bytes", addr, max_len));
}

absl::StatusOr<std::vector<uint8_t>> RebuildImageFromMemory(memory::Memory& mem,
                                                            uint64_t base,
                                                            uint64_t max_size) {
  absl::StatusOr<ElfImage> img = ReadElfImage(mem, base, ElfView::kLoaded);
  if (!img.ok()) return img.status();
  // The headers are the target's (a core's, so anyone's): before the image
  // is allocated, each segment's first and last byte must be readable, so
  // a header that claims hundreds of MiB the memory does not hold costs
  // nothing. Code must be there; data that is not is left out (the
  // unwinder needs the read-only part).
  struct Segment {
    const ElfPhdr* phdr;
    uint64_t addr;  // in the target
  };
  std::vector<Segment> segments;
  uint64_t size = 0;
  for (const ElfPhdr& p : img->phdrs) {
    uint64_t end;
    if (p.type != PT_LOAD) continue;
    if (!CheckedAdd(p.offset, p.filesz, &end) || end > max_size) {
      return absl::DataLossError(absl::StrFormat(
          "the image at 0x%x has a segment ending at file offset 0x%x, past "
          "the limit of 0x%x",
          base, p.offset + p.filesz, max_size));
    }
    if (p.filesz == 0) continue;
    uint64_t addr, last;
    uint8_t probe;
    const bool readable =
        CheckedAdd(img->load_bias, p.vaddr, &addr) &&
        CheckedAdd(addr, p.filesz - 1, &last) &&
        mem.ReadFully(addr, absl::MakeSpan(&probe, 1)).ok() &&
        mem.ReadFully(last, absl::MakeSpan(&probe, 1)).ok();
    if (!readable) {
      if (p.flags & PF_W) continue;
      return absl::DataLossError(absl::StrFormat(
          "code of the image at 0x%x: its segment at 0x%x (0x%x bytes) is not "
          "in the target's memory",
          base, img->load_bias + p.vaddr, p.filesz));
    }
    segments.push_back({&p, addr});
    size = std::max(size, end);
  }
  if (size == 0) {
    return absl::NotFoundError(
        absl::StrFormat("the image at 0x%x has no PT_LOAD", base));
  }
  std::vector<uint8_t> image(size);
  for (const Segment& seg : segments) {
    const ElfPhdr& p = *seg.phdr;
    absl::Status s =
        mem.ReadFully(seg.addr, absl::MakeSpan(image.data() + p.offset, p.filesz));
    if (!s.ok() && !(p.flags & PF_W)) {
      return Unreadable(s, "code of the image", seg.addr);
    }
  }
  // The section headers are not in any segment: drop them rather than let
  // a reader follow e_shoff into whatever bytes are there.
  const bool is64 = img->elf_class == ELFCLASS64;
  const size_t shoff_at = is64 ? 40 : 32, shoff_size = is64 ? 8 : 4;
  const size_t shnum_at = is64 ? 60 : 48;  // then e_shstrndx
  if (image.size() >= shnum_at + 4) {
    std::memset(image.data() + shoff_at, 0, shoff_size);
    std::memset(image.data() + shnum_at, 0, 4);
  }
  return image;
}

std::pair<uint64_t, uint64_t> LoadedExtent(const ElfImage& image,
                                           uint64_t page_size) {
  uint64_t lo = UINT64_MAX, hi = 0;
  for (const ElfPhdr& p : image.phdrs) {
    if (p.type != PT_LOAD || p.memsz == 0) continue;
    uint64_t start, end;
    if (!CheckedAdd(image.load_bias, p.vaddr, &start) ||
        !CheckedAdd(start, p.memsz, &end) ||
        !CheckedAdd(end, page_size - 1, &end)) {
      continue;
    }
    lo = std::min(lo, start & ~(page_size - 1));
    hi = std::max(hi, end & ~(page_size - 1));
  }
  if (lo >= hi) return {0, 0};
  return {lo, hi};
}

}  // namespace unwindd::proc
