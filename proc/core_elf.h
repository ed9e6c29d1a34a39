// ELF headers read through a Memory: a core file's own headers (the file
// seen as memory at address 0), and the images a core's memory holds (the
// executable's and libraries' first page, the vDSO), which is how a core
// says which build of each module it ran and where it was loaded.
//
//   absl::StatusOr<ElfImage> img = ReadElfImage(mem, 0x7f0000000000, kLoaded);
//   absl::StatusOr<std::string> id = ReadBuildId(mem, *img, kLoaded);
//
// kLoaded: `mem` is a process address space and `base` is where the ELF
// header was mapped; segment contents are at p_vaddr + load_bias.
// kFile: `mem` shows a file's bytes at `base` + file offset.
// Every size read is checked against small hard limits before it is used.
#ifndef UNWINDD_PROC_CORE_ELF_H_
#define UNWINDD_PROC_CORE_ELF_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "memory/memory.h"

namespace unwindd::proc {

enum class ElfView { kLoaded, kFile };

struct ElfPhdr {
  uint32_t type = 0;
  uint32_t flags = 0;
  uint64_t offset = 0;
  uint64_t vaddr = 0;
  uint64_t filesz = 0;
  uint64_t memsz = 0;
  uint64_t align = 0;
};

struct ElfImage {
  uint64_t base = 0;      // address of the ELF header in the memory read
  uint8_t elf_class = 0;  // ELFCLASS32 / ELFCLASS64
  uint16_t type = 0;      // ET_EXEC, ET_DYN, ET_CORE
  uint16_t machine = 0;
  uint64_t entry = 0;
  uint64_t shoff = 0;
  uint16_t shnum = 0;
  std::vector<ElfPhdr> phdrs;
  // kLoaded only: target address = p_vaddr + load_bias.
  uint64_t load_bias = 0;

  int word_size() const { return elf_class == 2 ? 8 : 4; }
};

// More program headers than any linker writes; a core may have one per
// mapping, which the core reader bounds itself (PN_XNUM).
inline constexpr uint64_t kMaxImagePhdrs = 4096;

// Header and program headers at `base`. DataLoss if there is no ELF magic
// or the headers are inconsistent; OutOfRange if they cannot be read;
// Unimplemented for big-endian images. `max_phdrs` bounds e_phnum.
absl::StatusOr<ElfImage> ReadElfImage(memory::Memory& mem, uint64_t base,
                                      ElfView view,
                                      uint64_t max_phdrs = kMaxImagePhdrs);

// `count` program headers of `elf_class` at `addr`.
absl::StatusOr<std::vector<ElfPhdr>> ReadPhdrs(memory::Memory& mem,
                                               uint64_t addr, uint64_t count,
                                               uint8_t elf_class);

// The loaded image whose program headers the kernel passed in AT_PHDR /
// AT_PHNUM: the bias comes from PT_PHDR (or, without one, from the
// PT_LOAD that maps file offset 0 with the headers at `phdr_addr`).
absl::StatusOr<ElfImage> ElfImageFromPhdrs(memory::Memory& mem,
                                           uint64_t phdr_addr, uint64_t phnum,
                                           uint8_t elf_class);

// Lowercase hex of the NT_GNU_BUILD_ID note in the image's PT_NOTE
// segments; NotFound if there is none or it is not readable.
absl::StatusOr<std::string> ReadBuildId(memory::Memory& mem,
                                        const ElfImage& image, ElfView view);

// A loaded image's PT_DYNAMIC entries (d_tag, d_val) up to DT_NULL.
absl::StatusOr<std::vector<std::pair<int64_t, uint64_t>>> ReadDynamic(
    memory::Memory& mem, const ElfImage& image);

// The NUL-terminated string at `addr`, at most `max_len` bytes.
absl::StatusOr<std::string> ReadCString(memory::Memory& mem, uint64_t addr,
                                        size_t max_len);

// The file image of the ELF object whose header is loaded at `base`,
// rebuilt from `mem` for when its file cannot be found: each read-only
// PT_LOAD's bytes are read from p_vaddr + bias and put at p_offset
// (writable ones too when readable, else zeros: unwinding needs only the
// headers, .eh_frame_hdr and .eh_frame). Section headers are dropped, so
// consumers find the tables through PT_GNU_EH_FRAME. OutOfRange when the
// read-only segments were not dumped (the usual kernel core), DataLoss for
// an image larger than `max_size`.
absl::StatusOr<std::vector<uint8_t>> RebuildImageFromMemory(memory::Memory& mem,
                                                            uint64_t base,
                                                            uint64_t max_size);

// [lowest, highest) target addresses of the loaded image's PT_LOAD
// segments, page-aligned; {0, 0} if it has none.
std::pair<uint64_t, uint64_t> LoadedExtent(const ElfImage& image,
                                           uint64_t page_size = 4096);

}  // namespace unwindd::proc

#endif  // UNWINDD_PROC_CORE_ELF_H_
