// The dynamic linker's list of loaded objects, read from a process image:
// the executable's PT_DYNAMIC holds DT_DEBUG = &_r_debug (set by ld.so at
// startup), whose r_map heads the doubly linked `struct link_map` list
// (<link.h>). This is how modules are found in cores that have no NT_FILE
// note (qemu-user, minimal dumpers) — the way gdb's solib-svr4 does it.
//
//   absl::StatusOr<uint64_t> r_debug = FindRDebug(mem, exe_image);
//   absl::StatusOr<std::vector<LinkMapEntry>> objs =
//       ReadLinkMap(mem, *r_debug, exe_image.word_size());
//
// Addresses are target addresses. Everything read is bounded: entry count,
// name length, and a visited set against lists that loop.
#ifndef UNWINDD_PROC_LINK_MAP_H_
#define UNWINDD_PROC_LINK_MAP_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "memory/memory.h"
#include "proc/core_elf.h"

namespace unwindd::proc {

struct LinkMapEntry {
  uint64_t l_addr = 0;  // load bias
  std::string name;     // l_name: "" for the executable itself
  uint64_t l_ld = 0;    // address of the object's dynamic section
};

inline constexpr size_t kMaxLinkMapEntries = 65536;
// PATH_MAX: longer names are not ones ld.so stored.
inline constexpr size_t kMaxLinkMapName = 4096;

// &_r_debug from the executable's DT_DEBUG. NotFound when there is none
// (static executables) or ld.so never filled it in.
absl::StatusOr<uint64_t> FindRDebug(memory::Memory& mem, const ElfImage& exe);

// The objects of r_debug.r_map in list order. DataLoss for a list that
// loops or is longer than kMaxLinkMapEntries; OutOfRange if r_debug itself
// is unreadable. An unreadable entry further down ends the list early (the
// entries read so far are returned).
absl::StatusOr<std::vector<LinkMapEntry>> ReadLinkMap(memory::Memory& mem,
                                                      uint64_t r_debug,
                                                      int word_size);

}  // namespace unwindd::proc

#endif  // UNWINDD_PROC_LINK_MAP_H_
