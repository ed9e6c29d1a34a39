// Profiler samples (UnwindSnapshots, UnwindSnapshotBatches) to unwound
// stacks: validates a sample against the server's limits, finds its mapping
// table and the files behind it as the caller may see them, decides whether
// its pid is still the sampled process, unwinds it and fills its response.
//
//   BuildIdIndex index;                                     // one per server
//   SnapshotSession session(caller, env, index, vdso, limits);  // per stream
//   session.DefineTable(batch.mapping_tables(i));           // per batch table
//   absl::Status s = session.Unwind(request, &cancel, &response);  // per sample
//
// Mapping tables (mapping_tables.h): a sample names a table the stream
// was sent before (mapping_table_id), carries one (mapping_table), sends
// its mappings itself (the old way: `mappings`, reused while the next
// samples send the same ones or none with the same pid), or gives only a
// live pid (its /proc/PID/maps). Every table is resolved once — its files
// opened as the caller, images checked — and gets one proc::SnapshotTarget
// and unwinder::AddressSpace over it (opened modules, per-PC step cache),
// built on first use and shared by every sample with that table; at most
// kMaxSpaces tables of a stream keep theirs at once (least recently used
// dropped). Only a sample's thread, registers and stack (borrowed from the
// request, never copied) and its process memory change, and they are
// cleared once it is unwound.
//
// Files: a mapping's path (after the table's path_map and sysroot) is
// opened with the caller's filesystem identity (auth.h). With a build-id,
// the file is used only if its build-id matches; otherwise the server looks
// the build-id up among files it has verified before, on any stream
// (BuildIdIndex), so a profiler whose paths moved still gets unwind info.
// Without a build-id but with an inode (and device, generation), the file
// is used only if it is that inode. Opened files are kept for the stream's
// lifetime (bounded), and their modules by the shared ModuleCache.
//
// The pid (pid_identity.h): live memory and /proc/PID/maps are used only
// when the process at the pid is the sampled one (start time) and the
// caller may read it — checked per sample — and the read is kept only if
// the process was still there after it. Otherwise the response says why
// (pid_ignored_reason) and the sample is unwound from its own bytes,
// images and files. The vDSO: a [vdso] mapping uses the image the client
// sent, else the server's own when the build-ids match.
//
// A session is used by one sample at a time (a stream's samples are
// unwound in order) but on whichever worker thread runs the sample.
#ifndef UNWINDD_SERVICE_SERVER_SNAPSHOTS_H_
#define UNWINDD_SERVICE_SERVER_SNAPSHOTS_H_

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "memory/memory.h"
#include "proc/snapshot_target.h"
#include "proto/unwinder.pb.h"
#include "service/server/auth.h"
#include "service/server/batch_reader.h"
#include "service/server/mapping_tables.h"
#include "service/server/pid_identity.h"
#include "service/server/response_encoder.h"
#include "service/server/unwind.h"
#include "unwinder/address_space.h"
#include "unwinder/unwinder.h"

namespace unwindd::service {

struct SnapshotLimits {
  uint64_t max_stack_bytes = 1 << 20;
  int max_mappings = 1 << 16;  // per table, and per sample's own mappings
  int max_path_maps = 64;
  int default_frames = unwinder::kDefaultMaxFrames;
  int max_frames = 4096;
  // Files a stream keeps open at once (each is an fd).
  int max_open_files = 1024;
  // Mapping tables a stream keeps (MappingTable), and their bytes.
  int max_tables = 1024;
  uint64_t max_table_bytes = 64ull << 20;
  // A mapping's image (the vDSO's, typically 8 KiB).
  uint64_t max_image_bytes = 1 << 20;
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

// The file identity a client recorded for a mapping (0: not given).
struct FileIdentity {
  uint64_t inode = 0;
  uint32_t dev_major = 0;
  uint32_t dev_minor = 0;
  uint64_t ino_generation = 0;
};

class SnapshotSession {
 public:
  // Tables whose address space is kept at once.
  static constexpr size_t kMaxSpaces = 16;

  SnapshotSession(Caller caller, UnwindEnv env, BuildIdIndex& index,
                  VdsoImage vdso, SnapshotLimits limits);

  // A table sent in a batch (before its samples): kept, or refused (the
  // refusal is returned and also answers every sample naming it).
  absl::Status DefineTable(const v1::MappingTable& t) { return tables_.Define(t); }
  void ReleaseTable(uint64_t id) { tables_.Release(id); }

  // Unwinds `r` into `out` (stack, modules, pid_ignored_reason; sample_id
  // and error are the caller's), whose strings stay valid until the next
  // Unwind: encode it before (response_encoder.h). Errors are the
  // sample's (the stream goes on): InvalidArgument for a malformed sample
  // or an unknown table, ResourceExhausted past a limit, PermissionDenied
  // or FailedPrecondition when it needs a process (no mappings, only a
  // pid) that the caller may not read or that is not the sampled one.
  // `*stop` (if given) gets why the walk stopped.
  absl::Status Unwind(const v1::SnapshotRequest& r, const std::atomic<bool>* cancel,
                      SampleAnswer* out, unwinder::StopReason* stop = nullptr);
  // The same with the sample's stack copy given apart (r.stack() is then
  // not read): a batch reader's, borrowed from the received bytes
  // (batch_reader.h). `stack` must stay valid until it returns.
  absl::Status Unwind(const v1::SnapshotRequest& r, const StackCopy& stack,
                      const std::atomic<bool>* cancel, SampleAnswer* out,
                      unwinder::StopReason* stop = nullptr);

  const MappingTables& tables() const { return tables_; }

 private:
  // What a sample may do with its pid.
  struct PidUse {
    bool live = false;    // read its memory and maps
    bool denied = false;  // not live because the caller may not read it
    std::string reason;   // why not live
  };

  absl::Status Validate(const v1::SnapshotRequest& r, const StackCopy& stack) const;
  // The sample's table (see the file comment), resolved.
  absl::StatusOr<std::shared_ptr<TableState>> TableFor(const v1::SnapshotRequest& r,
                                                       const PidUse& pid);
  absl::StatusOr<std::shared_ptr<TableState>> ProcTable(pid_t pid);
  void Resolve(TableState& t);
  // `t`'s address space for `a` and `r`'s debug_dirs and debuginfod, built
  // if it has none (or one for another arch, or other debug_dirs or
  // debuginfod).
  absl::Status EnsureSpace(const std::shared_ptr<TableState>& t, arch::Arch a,
                           const v1::SnapshotRequest& r);
  void DropSpace(TableState& t);
  // Unwinds the sample set on `t.target` into walk_.
  unwinder::ThreadStack& Walk(TableState& t, const arch::RegisterSet& regs,
                              const unwinder::UnwindOptions& options);
  void FillAnswer(const unwinder::ThreadStack& stack, TableState& t, SampleAnswer* out);
  // The answer's Module message for module `module` of `t.space`, kept in
  // `t` (TableState::module_answers).
  const std::string& EncodedModule(TableState& t, int module);

  // The file for `path` (already path-mapped), verified against `build_id`
  // or else `id` when given; null when there is none the caller may read.
  // `*opened` gets the path it was opened at.
  std::shared_ptr<const proc::SnapshotFile> File(const std::string& path,
                                                 const std::string& build_id,
                                                 const FileIdentity& id,
                                                 std::string* opened);
  std::shared_ptr<const proc::SnapshotFile> OpenVerified(const std::string& path,
                                                         const std::string& build_id,
                                                         const FileIdentity& id);

  const Caller caller_;
  const UnwindEnv env_;
  BuildIdIndex& index_;
  const VdsoImage vdso_;
  const SnapshotLimits limits_;
  MappingTables tables_;
  PidTracker pids_;
  // key (path, build-id, identity) -> file (null: none) and where it was
  // opened.
  struct OpenedFile {
    std::shared_ptr<const proc::SnapshotFile> file;
    std::string path;
  };
  absl::flat_hash_map<std::string, OpenedFile> files_;
  // The last table sent as a sample's own mappings (reused while samples
  // send the same), and the last table of a sample with a pid (reused by
  // samples of that pid that send none).
  std::shared_ptr<TableState> inline_;
  pid_t last_pid_ = -1;
  std::shared_ptr<TableState> last_table_;
  // Tables with an address space, for kMaxSpaces.
  std::vector<std::weak_ptr<TableState>> with_space_;
  uint64_t clock_ = 0;
  // Per module of the current space: its index in the answer (-1: not yet
  // in it), and the modules a sample put in its answer (reset after it).
  // Reused from sample to sample.
  std::vector<int> answer_index_;
  std::vector<int> answer_modules_;
  // The walk of the current sample (Walk), reused.
  unwinder::ThreadStack walk_;
};

}  // namespace unwindd::service

#endif  // UNWINDD_SERVICE_SERVER_SNAPSHOTS_H_
