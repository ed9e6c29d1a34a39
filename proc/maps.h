// /proc/PID/maps: one Mapping per line.
//
//   absl::StatusOr<std::vector<Mapping>> maps = ParseMaps(text);
//
// Addresses are in the target's address space; `offset` is the file offset
// mapped at `start`.
#ifndef UNWINDD_PROC_MAPS_H_
#define UNWINDD_PROC_MAPS_H_

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace unwindd::proc {

struct Mapping {
  uint64_t start = 0;
  uint64_t end = 0;
  uint64_t offset = 0;
  bool read = false;
  bool write = false;
  bool exec = false;
  bool shared = false;
  uint32_t dev_major = 0;
  uint32_t dev_minor = 0;
  uint64_t inode = 0;
  // As printed by the kernel, " (deleted)" removed; "[vdso]", "[stack]",
  // "[heap]"… for special mappings; empty for anonymous ones.
  std::string path;
  bool deleted = false;

  bool IsSpecial() const { return !path.empty() && path[0] == '[' && inode == 0; }
  bool IsFileBacked() const { return inode != 0 && !path.empty(); }
  bool Contains(uint64_t addr) const { return addr >= start && addr < end; }
};

// DataLoss naming the line for lines that do not parse.
absl::StatusOr<std::vector<Mapping>> ParseMaps(absl::string_view text);
absl::StatusOr<std::vector<Mapping>> ReadMaps(pid_t pid);

}  // namespace unwindd::proc

#endif  // UNWINDD_PROC_MAPS_H_
