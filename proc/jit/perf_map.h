// perf map files (tools/perf/Documentation/jit-interface.txt): the simplest
// thing a JIT runtime writes for profilers, /tmp/perf-PID.map, one line per
// piece of generated code,
//
//   START SIZE NAME
//
// START and SIZE in hex, with or without "0x", NAME the rest of the line
// (it may hold spaces). node --perf-basic-prof, Java's perf-map-agent,
// Python 3.12's -X perf and .NET's DOTNET_PerfMapEnabled write them. perf
// names code in anonymous executable memory by it (its dso is
// "/tmp/perf-PID.map" whether or not the file exists); so do we, for
// --symbols, pprof, folded and perf-script output. It holds names only: no
// unwinding information.
//
//   absl::StatusOr<PerfMap> map = PerfMap::Load("/tmp/perf-42.map", kMaxPerfMapBytes);
//   if (const PerfMapEntry* e = map->Find(pc)) ... e->name, pc - e->start
//
// A runtime appends as it compiles and reuses addresses after a GC: a later
// line for the same addresses replaces what an earlier one said of them.
// Lines that do not parse (and a last line still being written) are
// skipped and counted. Bounded: the file is read up to `max_bytes`, a name
// is cut at kMaxPerfMapName bytes.
#ifndef UNWINDD_PROC_JIT_PERF_MAP_H_
#define UNWINDD_PROC_JIT_PERF_MAP_H_

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proc/maps.h"

namespace unwindd::proc::jit {

inline constexpr uint64_t kMaxPerfMapBytes = uint64_t{256} << 20;
inline constexpr size_t kMaxPerfMapName = 4096;

struct PerfMapEntry {
  uint64_t start = 0;
  uint64_t end = 0;  // one past the last byte
  std::string name;
};

class PerfMap {
 public:
  PerfMap() = default;

  static PerfMap Parse(absl::string_view text);
  // NotFound when there is no such file; errors of open/read otherwise.
  static absl::StatusOr<PerfMap> Load(const std::string& path, uint64_t max_bytes);

  // The entry whose code holds `address`, or null.
  const PerfMapEntry* Find(uint64_t address) const;

  // Sorted by start, not overlapping (later lines laid over earlier ones).
  const std::vector<PerfMapEntry>& entries() const { return entries_; }
  size_t skipped_lines() const { return skipped_; }
  uint64_t file_bytes() const { return file_bytes_; }

 private:
  std::vector<PerfMapEntry> entries_;
  size_t skipped_ = 0;
  uint64_t file_bytes_ = 0;
};

// The maps of the processes a recording or a profile names, each read once
// on first need (through `path_of`, e.g. PerfMapPath, LivePerfMapPath, or a
// sysroot's copy) and kept; a process without one gets null. Thread-safe.
// Bounded: at most `max_processes` maps and `max_bytes` of files in all;
// past that, null.
class PerfMaps {
 public:
  explicit PerfMaps(std::function<std::string(pid_t)> path_of,
                    size_t max_processes = 4096, uint64_t max_bytes = kMaxPerfMapBytes);
  const PerfMap* Get(pid_t pid);

 private:
  const std::function<std::string(pid_t)> path_of_;
  const size_t max_processes_;
  absl::Mutex mu_;
  uint64_t bytes_left_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<pid_t, std::unique_ptr<const PerfMap>> maps_ ABSL_GUARDED_BY(mu_);
};

// perf's name for a process's map: "/tmp/perf-PID.map".
std::string PerfMapPath(pid_t pid);

// Whether perf names `m`'s code by the process's map (tools/perf/util/
// map.c map__new): executable memory that is anonymous ("//anon", "",
// "/dev/zero...", "/anon_hugepage...") or has no file ("[stack...",
// "[heap]", "/SYSV..."). perf then calls its DSO "/tmp/perf-PID.map"
// whether or not that file exists.
bool NamedByPerfMap(const Mapping& m);

// PID when `path` is "/tmp/perf-PID.map", else 0.
pid_t PerfMapPid(absl::string_view path);

// The map file of a live process on this machine: its /tmp seen through
// /proc/PID/root, named by its PID in its own PID namespace (what the
// runtime wrote), as perf finds it for a process in a container.
std::string LivePerfMapPath(pid_t pid);

}  // namespace unwindd::proc::jit

#endif  // UNWINDD_PROC_JIT_PERF_MAP_H_
