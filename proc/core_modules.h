// Which files a core's process had mapped, and where: the mappings a
// CoreTarget reports. Three sources, best first:
//
//   1. NT_FILE (kernel cores since Linux 3.7, gdb's gcore): every
//      file-backed mapping with its path and file offset.
//   2. The dynamic linker's r_debug -> link_map list, found from AT_PHDR /
//      PT_DYNAMIC / DT_DEBUG in the core's own memory (cores from qemu-user
//      and minimal dumpers have no NT_FILE).
//   3. ELF headers at the start of executable segments (or of the segments
//      just before them), named by DT_SONAME, AT_ENTRY or AT_SYSINFO_EHDR.
//
//   DiscoveredModules d = DiscoverModules(core, dumped_memory, file_headers);
//
// `dumped` must show only what the core itself holds: discovery reads
// headers and linker structures from it, never from files on this machine.
#ifndef UNWINDD_PROC_CORE_MODULES_H_
#define UNWINDD_PROC_CORE_MODULES_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "memory/memory.h"
#include "proc/core_elf.h"
#include "proc/core_file.h"
#include "proc/maps.h"

namespace unwindd::proc {

// kProcMaps: not discovered in the core but given with it
// (systemd-coredump's COREDUMP_PROC_MAPS, CoreOptions::proc_maps).
enum class ModuleSource { kNtFile, kLinkMap, kElfHeaders, kProcMaps };

// "nt_file", "link_map", "elf_headers", "proc_maps".
absl::string_view ModuleSourceName(ModuleSource s);

struct DiscoveredModules {
  ModuleSource source = ModuleSource::kNtFile;
  // Sorted by start. File-backed mappings carry the path the core recorded
  // (inode 0: a core does not record inodes); "[vdso]" for the vDSO; the
  // rest of the core's segments are anonymous (empty path).
  std::vector<Mapping> mappings;
  // The recorded path of the main executable; "" if it could not be told.
  std::string main_executable;
  // Why a better source could not be used, and what else went wrong.
  std::vector<std::string> warnings;
};

// For link_map entries whose ELF headers the core did not dump: the headers
// of the file on this machine for a recorded path (kFile view).
using FileHeaderReader = std::function<absl::StatusOr<ElfImage>(
    const std::string& recorded, bool is_exe)>;

// For an image found by its ELF header that has no readable name (its
// DT_SONAME string was not dumped): a path, as a core would have recorded
// it, of a file on this machine with that build-id; "" if none.
using BuildIdFinder = std::function<std::string(const std::string& build_id)>;

DiscoveredModules DiscoverModules(const CoreFile& core, memory::Memory& dumped,
                                  const FileHeaderReader& file_headers,
                                  const BuildIdFinder& find_by_build_id);

}  // namespace unwindd::proc

#endif  // UNWINDD_PROC_CORE_MODULES_H_
