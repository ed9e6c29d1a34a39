// One symbol's address looked up in an ELF file, as the dynamic linker
// (.dynsym through .gnu.hash) or gdb's minimal symbols (.symtab) find it,
// and the load bias of a mapping of that file.
//
//   absl::StatusOr<std::optional<ElfSymbol>> s =
//       FindElfSymbol(path, "__jit_debug_descriptor");
//   absl::StatusOr<uint64_t> bias = LoadBias((*s)->loads, m.start, m.offset);
//   uint64_t target_addr = (*s)->value + *bias;
#ifndef UNWINDD_PROC_JIT_ELF_SYMBOL_H_
#define UNWINDD_PROC_JIT_ELF_SYMBOL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace unwindd::proc::jit {

// .symtab entries scanned at most (a debug build's executable has a few
// million; more is not a file a compiler wrote).
inline constexpr uint64_t kMaxSymtabScan = uint64_t{16} << 20;

struct ElfLoad {
  uint64_t vaddr = 0, offset = 0, filesz = 0;
};

struct ElfSymbol {
  uint64_t value = 0;  // st_value: a file address
  std::vector<ElfLoad> loads;  // the file's PT_LOADs
};

// The defined symbol `name` in the ELF file at `path` (.dynsym first, by
// its GNU hash table when there is one, then .symtab); nullopt if the file
// does not define it or is not ELF. An error when the file cannot be
// opened (the caller may try another path to it).
absl::StatusOr<std::optional<ElfSymbol>> FindElfSymbol(const std::string& path,
                                                       absl::string_view name);

// Target address - file address for a mapping of the file at `map_start`
// from file offset `map_offset` (the PT_LOAD that maps that offset).
absl::StatusOr<uint64_t> LoadBias(const std::vector<ElfLoad>& loads, uint64_t map_start,
                                  uint64_t map_offset);

}  // namespace unwindd::proc::jit

#endif  // UNWINDD_PROC_JIT_ELF_SYMBOL_H_
