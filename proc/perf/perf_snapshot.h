// A perf sample as the project's snapshot target: the sample's registers
// (PERF_SAMPLE_REGS_USER, perf's register numbering), its stack copy
// (PERF_SAMPLE_STACK_USER, which the kernel copies from the user SP up),
// and its process's mapping table at that time (process_maps.h), with the
// recorded files opened here. The unwinder then walks it like any target.
//
//   PerfSnapshotter snap(reader->info(), {});
//   // for each sample, after ProcessMaps::Apply:
//   absl::StatusOr<PerfSnapshotter::Prepared> p = snap.Prepare(
//       event.sample, reader->attrs().at(event.attr_index),
//       maps.Find(event.sample.pid));
//   // p->target has the sample set; build an unwinder::AddressSpace over
//   // it only when p->target_id changed (see snapshot_target.h's "stream
//   // of samples"), keeping p->target alive as long as that space.
//
// Files: each recorded path (through SnapshotOptions::locate, e.g. a
// sysroot) is opened once and checked against the build-id the recording
// gives for it (MMAP2's build-id form, else the HEADER_BUILD_ID feature,
// matched by file name as perf's dsos are). A file of another build is
// refused and then looked up in perf's build-id cache. The vDSO: perf does
// not put its bytes in perf.data; perf record copies it, like every DSO
// with samples, into its build-id cache (~/.debug/[vdso]/BUILD_ID/vdso,
// also reachable as ~/.debug/.build-id/XX/REST/vdso). With
// SnapshotOptions::buildid_dir set, the [vdso] image comes from there;
// otherwise from SnapshotOptions::find_vdso, or the caller goes without.
//
// The architecture is the recording's (HEADER_ARCH and each sample's
// register ABI: a 32-bit process recorded on x86_64 is kX86), never the
// host's.
#ifndef UNWINDD_PROC_PERF_PERF_SNAPSHOT_H_
#define UNWINDD_PROC_PERF_PERF_SNAPSHOT_H_

#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "arch/arch.h"
#include "proc/perf/header.h"
#include "proc/perf/process_maps.h"
#include "proc/perf/records.h"
#include "proc/snapshot_target.h"

namespace unwindd::proc::perf {

inline constexpr size_t kMaxCachedTargets = 256;   // processes
inline constexpr size_t kMaxOpenFiles = 1024;
inline constexpr uint64_t kMaxVdsoBytes = 1 << 20;

struct SnapshotOptions {
  // The path to open here for a recorded path (a sysroot, a path map);
  // null: the recorded path itself.
  std::function<std::string(const std::string& recorded)> locate;
  // perf's build-id cache directory (perf record's default is ~/.debug);
  // "" to use none.
  std::string buildid_dir;
  // A [vdso] image for a build-id ("" when the recording has none, as in
  // pipe mode) when the cache has none; null: none.
  std::function<std::shared_ptr<const std::vector<uint8_t>>(
      const std::string& build_id)>
      find_vdso;
  // Use this process's own vDSO for [vdso] when its build-id is the
  // recording's, or, when the recording names none (pipe mode), when the
  // recording's kernel release (HEADER_OSRELEASE) is this machine's. perf
  // does the latter unconditionally (tools/perf/util/vdso.c copies its own
  // vDSO), which is right only for a recording of this kernel.
  bool use_own_vdso = false;
};

// What happened to one recorded file.
struct FileReport {
  std::string recorded_path;
  std::string opened_path;       // "" if none was usable
  std::string recorded_build_id;  // "" if the recording has none
  std::string file_build_id;
  std::string error;  // why no file is used ("" if one is)
  bool mismatch = false;
};

// The architecture of a recording's samples: HEADER_ARCH ("x86_64",
// "aarch64", "i686", ...) and the sample's PERF_SAMPLE_REGS_ABI_*. Without
// HEADER_ARCH (some pipe recordings) the register mask tells: arm64 samples
// 33 registers (mask 0x1ffffffff), x86 never sets bit 32. Unimplemented for
// another architecture.
absl::StatusOr<arch::Arch> ArchOfSample(const std::string& header_arch,
                                        uint64_t regs_abi, uint64_t regs_mask);

// This process's [vdso] bytes and their build-id; NotFound without one.
struct OwnVdso {
  std::shared_ptr<const std::vector<uint8_t>> image;
  std::string build_id;
};
absl::StatusOr<OwnVdso> ReadOwnVdso();

class PerfSnapshotter {
 public:
  PerfSnapshotter(const RecordingInfo& info, SnapshotOptions options);

  struct Prepared {
    std::shared_ptr<SnapshotTarget> target;  // with the sample set
    // Equal for two samples exactly when they share `target` (the same
    // process and mapping table): the key for reusing an AddressSpace.
    uint64_t target_id = 0;
    bool new_target = false;
    arch::Arch arch = arch::Arch::kX86_64;
  };

  // FailedPrecondition for a sample without user registers (a kernel
  // thread, or REGS_USER not recorded) or without the process's mappings;
  // InvalidArgument for registers the target refuses. The sample's bytes
  // must outlive the unwind of it (the stack is borrowed, not copied).
  absl::StatusOr<Prepared> Prepare(const Sample& sample, const EventAttr& attr,
                                   const ProcessTable* table);

  // What a sample needs to be unwound elsewhere (on another thread, over a
  // SnapshotTarget of that thread's own): its arch and registers, and the
  // mapping table of its process at its time, shared and immutable, with
  // its files opened. Samples with the same target_id have the same table.
  // The stack copy is sample.valid_stack(), starting at registers.sp().
  // Errors as Prepare's; `out` is filled in place (a caller keeps one and
  // reuses it), and on an error holds nothing of use.
  struct Resolved {
    uint64_t target_id = 0;
    arch::Arch arch = arch::Arch::kX86_64;
    pid_t pid = 0;
    std::shared_ptr<const std::vector<SnapshotMapping>> mappings;
    arch::RegisterSet registers;
  };
  absl::Status Resolve(const Sample& sample, const EventAttr& attr, const ProcessTable* table,
                       Resolved& out);
  // The same for a sample that brings no registers, only its callchain
  // (perf record -g): its process's table and the recording's arch;
  // `out.registers` holds none. FailedPrecondition without mappings.
  absl::Status ResolveWithoutRegisters(const Sample& sample, const ProcessTable* table,
                                       Resolved& out);

  // Every recorded file looked at so far, in first-use order.
  std::vector<FileReport> files() const;

 private:
  struct OpenedFile {
    std::shared_ptr<const SnapshotFile> file;  // null if unusable
    FileReport report;
  };
  struct CachedTarget {
    uint64_t generation = 0;
    arch::Arch arch = arch::Arch::kX86_64;
    std::shared_ptr<const std::vector<SnapshotMapping>> mappings;
    std::shared_ptr<SnapshotTarget> target;  // built on first Prepare
    uint64_t target_id = 0;
    std::list<uint32_t>::iterator lru;
  };

  std::vector<SnapshotMapping> Build(const ProcessTable& table);
  // `out`'s target, arch, pid and mappings: the cached table of `table`'s
  // process, built again when the table or the arch changed.
  void ResolveTable(const ProcessTable& table, arch::Arch arch, Resolved& out);
  static absl::Status NoMappings(const Sample& sample);
  const OpenedFile& Open(const std::string& recorded_path,
                         const std::string& build_id);
  std::shared_ptr<const std::vector<uint8_t>> Vdso(const std::string& build_id);
  std::string RecordedBuildId(const PerfMapping& m) const;

  const RecordingInfo& info_;
  SnapshotOptions options_;
  absl::flat_hash_map<std::string, std::string> build_ids_;  // by file name
  absl::flat_hash_map<std::string, OpenedFile> files_;  // by path + build-id
  std::vector<std::string> file_order_;
  absl::flat_hash_map<std::string, std::shared_ptr<const std::vector<uint8_t>>> vdsos_;
  absl::flat_hash_map<uint32_t, CachedTarget> targets_;
  std::list<uint32_t> lru_;  // pids, most recently used first
  uint64_t next_target_id_ = 1;
  Resolved resolved_;  // Prepare's, reused from sample to sample
  bool own_vdso_read_ = false;
  absl::StatusOr<OwnVdso> own_vdso_ = absl::NotFoundError("not read");
};

}  // namespace unwindd::proc::perf

#endif  // UNWINDD_PROC_PERF_PERF_SNAPSHOT_H_
