// The contents of an ELF section, decompressed when the file stores it
// compressed:
//
//   - SHF_COMPRESSED (ELF gABI "Section Compression"): an Elf32/64_Chdr,
//     then the payload; ch_type ELFCOMPRESS_ZLIB (objcopy
//     --compress-debug-sections=zlib) or ELFCOMPRESS_ZSTD (=zstd,
//     binutils 2.40).
//   - legacy GNU compression: a section renamed .zdebug_*, starting with
//     "ZLIB" and the uncompressed size as 8 big-endian bytes (=zlib-gnu).
//
// Decompression goes through elfutils' elf_compress / elf_compress_gnu.
// Debian 12's libelf (elfutils 0.188) knows only ELFCOMPRESS_ZLIB (zstd
// support came in 0.189), so for ELFCOMPRESS_ZSTD, when elf_compress
// refuses it, the payload goes to libzstd (the library elf_compress itself
// uses from 0.189 on), with the same size check.
//
//   std::vector<uint8_t> storage;
//   absl::StatusOr<SectionData> d =
//       ReadSectionData(elf, FindDebugSection(elf, ".debug_frame"),
//                       kDefaultMaxSectionBytes, &storage);
//
// The uncompressed size a section claims is checked against `max_bytes`
// before anything is allocated.
#ifndef UNWINDD_UNWINDER_LOCATE_SECTION_DATA_H_
#define UNWINDD_UNWINDER_LOCATE_SECTION_DATA_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

typedef struct Elf Elf;
typedef struct Elf_Scn Elf_Scn;

namespace unwindd::locate {

enum class Compression { kNone, kZlib, kZstd, kZlibGnu };
absl::string_view CompressionName(Compression c);

struct SectionData {
  // Valid while the Elf handle (and `storage`, for zstd) lives.
  absl::Span<const uint8_t> bytes;
  Compression compression = Compression::kNone;
  uint64_t sh_addr = 0;
};

// 1 GiB: .debug_frame of the largest libraries is tens of MiB.
inline constexpr uint64_t kDefaultMaxSectionBytes = uint64_t{1} << 30;

// The section called `name` (e.g. ".debug_frame"), or its legacy
// compressed twin ".zdebug_frame"; nullptr if neither exists.
Elf_Scn* FindDebugSection(Elf* elf, absl::string_view name);

// The section's bytes, decompressed. An empty span for SHT_NOBITS.
// ResourceExhausted when the uncompressed size exceeds `max_bytes`;
// DataLoss for a malformed compression header or payload; Unimplemented
// for a compression type neither libelf nor we know. Decompressing
// changes the section in `elf` (elf_compress works in place), so call it
// once per section.
absl::StatusOr<SectionData> ReadSectionData(Elf* elf, Elf_Scn* scn,
                                            uint64_t max_bytes,
                                            std::vector<uint8_t>* storage);

}  // namespace unwindd::locate

#endif  // UNWINDD_UNWINDER_LOCATE_SECTION_DATA_H_
