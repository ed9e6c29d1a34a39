// The files a post-mortem target (a core, a minidump) recorded by path and
// build-id, looked up on this machine: --exe, --sysroot and --path-map
// candidates in order, each checked against the recorded build-id, so that
// another build of a file is reported rather than used.
//
//   ResolvedFiles r = ResolveRecordedFiles(mappings, build_ids, lookup, exe);
//   for (const CoreFileStatus& f : r.files) ...   // found / missing / mismatch
//   regions.insert(regions.end(), r.regions.begin(), r.regions.end());
//
// A mapping names a file when its path is absolute-or-relative and not
// "[special]"; each file is resolved once, however many mappings it has.
#ifndef UNWINDD_PROC_RECORDED_FILES_H_
#define UNWINDD_PROC_RECORDED_FILES_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "memory/file_region_memory.h"
#include "memory/memory.h"
#include "memory/scoped_fd.h"
#include "proc/core_paths.h"
#include "proc/maps.h"

namespace unwindd::proc {

// What was found on this machine for one file the target recorded.
struct CoreFileStatus {
  enum class State { kFound, kMissing, kMismatch };
  std::string recorded;       // the path the target recorded
  std::string file;           // the file used (kFound) or rejected (kMismatch)
  std::string core_build_id;  // recorded by the target; "" if unknown
  std::string file_build_id;  // of `file`
  State state = State::kMissing;
  std::vector<std::string> tried;  // candidates, in order
};

// "found", "missing", "mismatch": the names the CLI's JSON and the API use.
absl::string_view CoreFileStateName(CoreFileStatus::State state);

// A mapping whose file the target names: a recorded path, not "[vdso]" or
// an anonymous mapping.
inline bool NamesFile(const Mapping& m) {
  return !m.path.empty() && m.path[0] != '[';
}

struct ResolvedFiles {
  std::vector<CoreFileStatus> files;  // in order of first mapping
  absl::flat_hash_map<std::string, size_t> index;  // recorded path -> files
  // Each found file's bytes at the addresses its mappings cover, for what
  // the target itself did not keep (read-only code, .eh_frame).
  std::vector<memory::FileRegion> regions;
  std::vector<std::string> warnings;  // one per missing or mismatched file
};

// `recorded_build_ids`: recorded path -> lowercase hex build-id.
// `executable`: the recorded path of the main executable (for --exe).
// `recorder` names the target in warnings ("core", "minidump").
ResolvedFiles ResolveRecordedFiles(
    const std::vector<Mapping>& mappings,
    const absl::flat_hash_map<std::string, std::string>& recorded_build_ids,
    const FileLookup& lookup, const std::string& executable,
    absl::string_view recorder = "core");

// A regular file opened read-only and viewed as memory at address 0.
struct OpenedCandidate {
  std::shared_ptr<const memory::ScopedFd> fd;
  std::unique_ptr<memory::Memory> as_memory;
  uint64_t size = 0;
};
std::optional<OpenedCandidate> OpenCandidate(const std::string& path);

// The GNU build-id of the ELF file `f` holds; "" if it has none.
std::string FileBuildId(const OpenedCandidate& f);

}  // namespace unwindd::proc

#endif  // UNWINDD_PROC_RECORDED_FILES_H_
