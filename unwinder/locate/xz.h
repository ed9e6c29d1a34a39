// MiniDebugInfo (gdb manual, "MiniDebugInfo"; Fedora's find-debuginfo):
// the .gnu_debugdata section of an ELF file is an xz stream holding
// another ELF file with a .symtab (and, as we build it, the CFI) that the
// stripped file dropped. This decompresses it, bounded.
//
//   absl::StatusOr<std::vector<uint8_t>> elf =
//       DecompressXz(elf_file.RawSectionBytes(".gnu_debugdata"), 64 << 20);
#ifndef UNWINDD_UNWINDER_LOCATE_XZ_H_
#define UNWINDD_UNWINDER_LOCATE_XZ_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace unwindd::locate {

// The decompressed bytes of one or more concatenated .xz streams in `in`.
// ResourceExhausted when they exceed `max_out` bytes or the decoder would
// need more than 256 MiB of memory (no xz preset needs more than 64 MiB);
// DataLoss for anything that is not a complete, valid stream.
absl::StatusOr<std::vector<uint8_t>> DecompressXz(absl::Span<const uint8_t> in,
                                                  uint64_t max_out);

}  // namespace unwindd::locate

#endif  // UNWINDD_UNWINDER_LOCATE_XZ_H_
