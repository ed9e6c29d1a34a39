// One ELF file (or in-memory ELF image) opened with libelf, and what the
// locators need to know about it: its GNU build-id, its .gnu_debuglink,
// its MiniDebugInfo (.gnu_debugdata) and whether it carries CFI itself.
//
//   absl::StatusOr<ElfFile> f = ElfFile::Open("/usr/bin/ls");
//   absl::StatusOr<ElfFacts> facts = f->Facts();
//   if (facts->debuglink) { ... facts->debuglink->name, ->crc ... }
//
// Every byte comes from a file someone else wrote: section sizes, note
// sizes and names are checked before use and bounded.
#ifndef UNWINDD_UNWINDER_LOCATE_ELF_FILE_H_
#define UNWINDD_UNWINDER_LOCATE_ELF_FILE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "memory/file_mapping.h"

typedef struct Elf Elf;
typedef struct Elf_Scn Elf_Scn;

namespace unwindd::locate {

// The .gnu_debuglink section (binutils, "Separate Debug Files" in gdb's
// manual): a file name, NUL, zero padding to a 4-byte boundary, then the
// CRC-32 of the whole debug file in the ELF file's byte order.
struct DebugLink {
  std::string name;  // a plain file name: no '/', not "." or ".."
  uint32_t crc = 0;
};

struct ElfFacts {
  std::string build_id;  // lowercase hex of NT_GNU_BUILD_ID, "" if none
  uint16_t machine = 0;  // e_machine
  uint8_t elf_class = 0; // ELFCLASS32 / ELFCLASS64
  uint16_t type = 0;     // ET_EXEC, ET_DYN, ...
  std::optional<DebugLink> debuglink;
  bool has_gnu_debugdata = false;
  // The section has contents here (PROGBITS, size > 0). An
  // `objcopy --only-keep-debug` file keeps .eh_frame as NOBITS: false.
  bool has_eh_frame = false;
  // .debug_frame, compressed or not, or legacy .zdebug_frame.
  bool has_debug_frame = false;
  bool has_symtab = false;
};

class ElfFile {
 public:
  // NotFound / PermissionDenied / FailedPrecondition (not a regular file)
  // for the file itself, DataLoss when it is not an ELF file.
  static absl::StatusOr<ElfFile> Open(const std::string& path);
  // An image held in memory (MiniDebugInfo, decompressed). `name` is for
  // messages.
  static absl::StatusOr<ElfFile> FromImage(
      std::shared_ptr<const std::vector<uint8_t>> image, std::string name);

  ElfFile(ElfFile&& other) noexcept;
  ElfFile& operator=(ElfFile&& other) noexcept;
  ElfFile(const ElfFile&) = delete;
  ElfFile& operator=(const ElfFile&) = delete;
  ~ElfFile();

  Elf* elf() const { return elf_; }
  int fd() const { return fd_; }
  const std::string& name() const { return name_; }
  const std::shared_ptr<const std::vector<uint8_t>>& image() const {
    return image_;
  }

  // Facts() fails with DataLoss if the file was found truncated meanwhile.
  absl::StatusOr<ElfFacts> Facts() const;
  // Whether a read of the file hit a page past its new end (a truncation
  // since it was opened: memory/file_mapping.h). False for images.
  bool changed() const { return mapping_ != nullptr && mapping_->changed(); }

  // The section called `name`; nullptr if there is none (or no section
  // headers).
  Elf_Scn* FindSection(absl::string_view name) const;
  // Raw (never decompressed) bytes of `name`; empty if absent or NOBITS.
  absl::Span<const uint8_t> RawSectionBytes(absl::string_view name) const;

 private:
  ElfFile() = default;
  void Reset();

  std::string name_;
  Elf* elf_ = nullptr;
  int fd_ = -1;
  std::shared_ptr<const std::vector<uint8_t>> image_;
  // The file's bytes (Open only), guarded against truncation.
  std::unique_ptr<memory::FileMapping> mapping_;
};

// Parses the contents of a .gnu_debuglink section. DataLoss for a name
// that is empty, unterminated, longer than 4096 bytes or not a plain file
// name (a '/' would let a file send the search anywhere), or for a
// section too short to hold the CRC.
absl::StatusOr<DebugLink> ParseDebugLink(absl::Span<const uint8_t> section,
                                         bool big_endian);

// Lowercase hex of `bytes`.
std::string ToHex(absl::Span<const uint8_t> bytes);

// A plausible build-id in hex: an even number of 2..128 lowercase hex
// digits (binutils writes 8 to 20 bytes; debuginfod takes up to 64).
bool IsBuildIdHex(absl::string_view hex);

}  // namespace unwindd::locate

#endif  // UNWINDD_UNWINDER_LOCATE_ELF_FILE_H_
