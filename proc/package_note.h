// The ELF package note (systemd's docs/ELF_PACKAGE_METADATA.md): a
// `.note.package` section whose note has owner "FDO", type 0xcafe1a7e and
// a zero-terminated JSON object as its descriptor, saying which package
// and distribution a binary came from. systemd-coredump and `coredumpctl
// info` print it per module; `unwind` puts it in JSON and proto output.
//
//   absl::StatusOr<PackageNote> p = ReadPackageNoteFromFile("/usr/bin/ls");
//   p->Get("name");   // "coreutils"
//
// Both the notes and the JSON come from files and memory a crash names:
// every length is checked, the JSON is bounded in size and nesting.
#ifndef UNWINDD_PROC_PACKAGE_NOTE_H_
#define UNWINDD_PROC_PACKAGE_NOTE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "memory/memory.h"
#include "proc/core_elf.h"

namespace unwindd::proc {

inline constexpr uint32_t kPackageNoteType = 0xcafe1a7e;  // FDO_PACKAGING_METADATA
inline constexpr absl::string_view kPackageNoteOwner = "FDO";
// The JSON payload's largest accepted size (the spec's examples are a few
// hundred bytes).
inline constexpr size_t kMaxPackageNoteBytes = 64 * 1024;

struct PackageNote {
  // Every top-level name and its value, in the note's order: strings as
  // they are, numbers and booleans as their JSON text; nested objects and
  // arrays as compact JSON.
  std::vector<std::pair<std::string, std::string>> fields;

  // The value of `key` ("type", "os", "osVersion", "name", "version",
  // "architecture", "osCpe", "debugInfoUrl", ...); "" if absent.
  std::string Get(absl::string_view key) const;
};

// The well-known keys, in the spec's order.
extern const absl::string_view kPackageNoteKeys[8];

// The note's JSON -> fields. DataLoss when it is not one JSON object.
absl::StatusOr<PackageNote> ParsePackageNote(absl::string_view json);

// The package note among ELF notes (a SHT_NOTE section's or PT_NOTE
// segment's bytes: Elf_Nhdr, name, descriptor, each 4-byte aligned).
// NotFound if none; DataLoss if the notes are malformed before one is.
absl::StatusOr<PackageNote> FindPackageNote(absl::Span<const uint8_t> notes);

// The package note of a file's note areas: its SHT_NOTE sections, or its
// PT_NOTE segments when it has no note sections (a stripped or split file
// keeps .note.package; segments for files whose section headers are
// gone). The first area that holds one, or is malformed before one, says.
absl::StatusOr<PackageNote> FindPackageNoteInAreas(
    absl::Span<const absl::Span<const uint8_t>> areas);

// From an ELF file, with libelf (SHT_NOTE sections, else PT_NOTE segments).
absl::StatusOr<PackageNote> ReadPackageNoteFromFile(const std::string& path);

// From an image in a target's memory (a core's dumped first pages): its
// PT_NOTE segments, read through `mem`.
absl::StatusOr<PackageNote> ReadPackageNoteFromImage(memory::Memory& mem,
                                                     const ElfImage& image,
                                                     ElfView view);

}  // namespace unwindd::proc

#endif  // UNWINDD_PROC_PACKAGE_NOTE_H_
