// Target memory backed by byte ranges of files: a core file's PT_LOAD
// segments, and the mapped files (executables, libraries) that supply what a
// core did not dump.
//
//   auto core = std::make_shared<ScopedFd>(OpenCloexec(path, O_RDONLY));
//   std::vector<FileRegion> regions = {
//       {.start = 0x7ffd0000, .size = 0x21000, .file = core, .file_offset =
//       0x5000},
//   };
//   absl::StatusOr<std::unique_ptr<Memory>> m =
//       CreateFileRegionMemory(std::move(regions));
//
// `start` is a target address; `file_offset` is where its first byte is in
// the file. Regions may overlap: where they do, the one earlier in the list
// wins, so a caller lists what it trusts most (the core's own bytes) first.
// A region that runs past the end of its file is readable only up to EOF.
#ifndef UNWINDD_MEMORY_FILE_REGION_MEMORY_H_
#define UNWINDD_MEMORY_FILE_REGION_MEMORY_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "memory/memory.h"
#include "memory/scoped_fd.h"

namespace unwindd::memory {

struct FileRegion {
  uint64_t start = 0;  // target address
  uint64_t size = 0;
  std::shared_ptr<const ScopedFd> file;
  uint64_t file_offset = 0;
};

// Bounds every caller: a core has one PT_LOAD per mapping (the kernel's
// default vm.max_map_count is 65530), plus as many file-backed ranges.
inline constexpr size_t kMaxFileRegions = size_t{1} << 20;

// InvalidArgument for a region whose range wraps past 2^64 or whose file is
// missing, or for more than kMaxFileRegions regions. Empty regions are
// dropped.
absl::StatusOr<std::unique_ptr<Memory>> CreateFileRegionMemory(
    std::vector<FileRegion> regions);

// pread() that retries on EINTR and short reads until `size` bytes, EOF or
// an error; returns the bytes read (0 at EOF or on error).
size_t PreadFully(int fd, uint8_t* dst, size_t size, uint64_t offset);

}  // namespace unwindd::memory

#endif  // UNWINDD_MEMORY_FILE_REGION_MEMORY_H_
