// Profiler samples (UnwindSnapshots) to SnapshotTargets: validates a sample
// against the server's limits, finds the files behind its mappings as the
// caller may see them, and unwinds it.
//
//   BuildIdIndex index;                       // one per server
//   SnapshotSession session(caller, env, index, limits);   // one per stream
//   absl::StatusOr<UnwindResult> r = session.Unwind(request);  // per sample
//
// Files: a mapping's path (after the sample's path_map and sysroot) is
// opened with the caller's filesystem identity (server_auth.h). If the
// mapping names a build-id, the file is used only if its build-id matches;
// otherwise the server looks the build-id up among files it has verified
// before, on any stream (BuildIdIndex) — so a profiler that only knows
// build-ids, or whose paths moved, still gets unwind info. Opened files are
// kept for the stream's lifetime (bounded), and their modules by the shared
// ModuleCache, so a stream's later samples cost no file system work.
//
// Samples with the same mapping table (the same mappings, build-ids,
// path_map, sysroot, pid and arch, or only the same pid) share one
// proc::SnapshotTarget and one unwinder::AddressSpace over it — its opened
// modules and its per-PC step cache — so a warm sample costs its own
// validation and the walk, not a rebuild of the address space. Only the
// sample's thread, registers and stack (borrowed from the request, never
// copied) change, and they are cleared once the sample is unwound. A
// different table replaces the shared ones (one per stream: bounded). What
// is checked per sample stays per sample: the sample's limits and fields,
// and whether the caller may read the process (a change of answer also
// rebuilds, since the [vdso] and live memory depend on it).
//
// A session is used by one sample at a time (a stream's samples are
// unwound in order) but on whichever worker thread runs the sample.
#ifndef UNWINDD_SERVICE_SERVER_SNAPSHOTS_H_
#define UNWINDD_SERVICE_SERVER_SNAPSHOTS_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "memory/memory.h"
#include "proc/snapshot_target.h"
#include "proto/unwinder.pb.h"
#include "service/common/convert.h"
#include "service/server/auth.h"
#include "service/server/unwind.h"
#include "unwinder/address_space.h"

namespace unwindd::service {

struct SnapshotLimits {
  uint64_t max_stack_bytes = 1 << 20;
  int max_mappings = 1 << 16;
  int max_path_maps = 64;
  int default_frames = unwinder::kDefaultMaxFrames;
  int max_frames = 4096;
  // Files a stream keeps open at once (each is an fd).
  int max_open_files = 1024;
};

// build-id -> a path that was verified to have it. Server-wide, bounded.
class BuildIdIndex {
 public:
  explicit BuildIdIndex(size_t max_entries = 1 << 16) : max_(max_entries) {}
  void Put(const std::string& build_id, const std::string& path);
  std::string Get(const std::string& build_id) const;  // "" if unknown

 private:
  const size_t max_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::string> paths_ ABSL_GUARDED_BY(mu_);
};

// This machine's vDSO: what a sample's [vdso] maps when its build-id says
// it came from the same kernel. Empty if there is none.
struct VdsoImage {
  std::shared_ptr<const std::vector<uint8_t>> bytes;
  std::string build_id;
};
VdsoImage ReadOwnVdso(unwinder::ModuleCache& cache);

class SnapshotSession {
 public:
  SnapshotSession(Caller caller, UnwindEnv env, BuildIdIndex& index,
                  VdsoImage vdso, SnapshotLimits limits)
      : caller_(std::move(caller)),
        env_(env),
        index_(index),
        vdso_(std::move(vdso)),
        limits_(limits) {}

  // Errors are the sample's (the stream goes on): InvalidArgument for a
  // malformed sample, ResourceExhausted past a limit, PermissionDenied when
  // it needs a process the caller may not read.
  absl::StatusOr<UnwindResult> Unwind(const v1::SnapshotRequest& request,
                                      const std::atomic<bool>* cancel);

 private:
  // What samples with one mapping table share; `space` is built over
  // `counted`, which wraps `target`.
  struct Space {
    // The key: the request's table as sent (before path_map and sysroot).
    struct MappingKey {
      uint64_t start, end, offset;
      bool read, write, exec;
      std::string path, build_id;
    };
    arch::Arch arch = arch::Arch::kX86_64;
    pid_t pid = 0;
    bool process_readable = false;
    std::vector<MappingKey> mappings;  // empty: read from /proc/PID/maps
    std::string sysroot;
    std::vector<std::pair<std::string, std::string>> path_map;
    std::vector<std::string> debug_dirs;  // as sent
    bool debuginfod = false;
    locate::LocateOptions locate;  // `space` looks elsewhere with these

    std::unique_ptr<memory::Memory> process;  // when process_readable
    std::unique_ptr<proc::SnapshotTarget> target;
    std::unique_ptr<proc::Target> counted;
    std::unique_ptr<unwinder::AddressSpace> space;

    // `r` has this table, or (no mappings) the same pid.
    bool Serves(const v1::SnapshotRequest& r, arch::Arch a, bool readable) const;
  };

  absl::Status Validate(const v1::SnapshotRequest& r) const;
  // space_ for `r`: the current one if it serves, else a new one.
  absl::Status PrepareSpace(const v1::SnapshotRequest& r, arch::Arch a,
                            bool process_readable);
  absl::StatusOr<std::vector<proc::SnapshotMapping>> Mappings(
      const v1::SnapshotRequest& r, bool process_readable);
  // The file for `path` (already path-mapped), verified against `build_id`
  // when given; null when there is none the caller may read.
  std::shared_ptr<const proc::SnapshotFile> File(const std::string& path,
                                                 const std::string& build_id);
  std::shared_ptr<const proc::SnapshotFile> OpenVerified(
      const std::string& path, const std::string& build_id);

  const Caller caller_;
  const UnwindEnv env_;
  BuildIdIndex& index_;
  const VdsoImage vdso_;
  const SnapshotLimits limits_;
  // path + '\0' + build_id -> file (null: none).
  absl::flat_hash_map<std::string, std::shared_ptr<const proc::SnapshotFile>>
      files_;
  // The last sample's resolved mappings, reused by samples that send none.
  pid_t last_pid_ = -1;
  std::vector<proc::SnapshotMapping> last_mappings_;
  std::unique_ptr<Space> space_;
};

}  // namespace unwindd::service

#endif  // UNWINDD_SERVICE_SERVER_SNAPSHOTS_H_
