// A profiler's sample as a Target: one thread's registers, a copy of its
// stack (perf's PERF_SAMPLE_REGS_USER / PERF_SAMPLE_STACK_USER), and the
// process's mappings with the files behind them.
//
//   Snapshot s;
//   s.arch = arch::Arch::kX86_64;
//   s.registers = regs;                       // DWARF numbering
//   s.stack_address = sp; s.stack = bytes;    // copied from sp upwards
//   s.mappings.push_back({m, *SnapshotFile::FromFd(std::move(fd)), nullptr});
//   absl::StatusOr<std::unique_ptr<Target>> t =
//       CreateSnapshotTarget(std::move(s), /*process_memory=*/nullptr);
//
// A stream of samples of one process (a profiler's) keeps one
// SnapshotTarget for as long as the mappings stay the same, so that an
// unwinder::AddressSpace built over it (its opened modules, its per-PC step
// cache) serves every sample; only the per-sample parts change:
//
//   std::unique_ptr<SnapshotTarget> t = *SnapshotTarget::Create(arch, pid, mappings);
//   unwinder::AddressSpace space(*t, cache);
//   for (each sample) {
//     t->SetSample({tid, regs, sp, stack_bytes, process_memory_or_null});
//     UnwindTarget(*t, space, options);
//     t->ClearSample();               // nothing of it is seen by the next one
//   }
//
// Memory is an overlay, first match wins, per byte range:
//   1. the stack copy;
//   2. in-memory images given for a mapping (e.g. a [vdso] copy);
//   3. read-only file-backed mappings, read from their file at
//      mapping.offset + (addr - mapping.start) — text and read-only data are
//      the same in the file as in memory;
//   4. the live process, when `process_memory` is given (stale for anything
//      that changed since the sample, which is why the stack copy wins);
//   5. writable file-backed mappings from their file (pre-relocation values:
//      a last resort, better than nothing for .data.rel.ro).
// Everything else is unreadable, so a walk that leaves the copied stack
// stops with memory_error instead of reading garbage.
//
// Files are opened by whoever builds the Snapshot: that is where the decision
// "may the requester read this file" belongs (the server opens them with the
// requester's filesystem uid). FileCandidates() names each file through
// /proc/self/fd, so the module cache opens exactly the file that was checked.
#ifndef UNWINDD_PROC_SNAPSHOT_TARGET_H_
#define UNWINDD_PROC_SNAPSHOT_TARGET_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "arch/arch.h"
#include "arch/register_set.h"
#include "memory/memory.h"
#include "memory/scoped_fd.h"
#include "proc/maps.h"
#include "proc/target.h"

namespace unwindd::proc {

// An open, regular file that snapshot mappings read from. Immutable and
// shareable between snapshots (reads use pread, no file position).
class SnapshotFile {
 public:
  // Takes `fd`; FailedPrecondition unless it is a regular file.
  static absl::StatusOr<std::shared_ptr<const SnapshotFile>> FromFd(
      memory::ScopedFd fd);

  int fd() const { return fd_.get(); }
  uint64_t size() const { return size_; }
  dev_t dev() const { return dev_; }
  ino_t inode() const { return inode_; }
  // Opens this very file for as long as this object lives.
  std::string proc_path() const;

  // Up to dst.size() bytes at file offset `offset`; fewer at end of file.
  size_t Read(uint64_t offset, absl::Span<uint8_t> dst) const;

 private:
  SnapshotFile(memory::ScopedFd fd, uint64_t size, dev_t dev, ino_t inode)
      : fd_(std::move(fd)), size_(size), dev_(dev), inode_(inode) {}

  memory::ScopedFd fd_;
  uint64_t size_;
  dev_t dev_;
  ino_t inode_;
};

struct SnapshotMapping {
  // start, end, offset, protection and path as the process had them; dev
  // and inode are ignored (CreateSnapshotTarget takes them from `file`).
  Mapping mapping;
  // The file behind a file-backed mapping; null if there is none to read.
  std::shared_ptr<const SnapshotFile> file;
  // The mapping's bytes from `mapping.start` on (e.g. a copy of [vdso]);
  // null if none.
  std::shared_ptr<const std::vector<uint8_t>> image;
  // The build-id the sample gave for the mapped file (lowercase hex), if
  // any: the unwinder will not use a file with another one.
  std::string build_id;
  // What describes the mapping's code when no file does (JIT code:
  // Target::CodeImageFor), or null.
  std::shared_ptr<const CodeImage> code_image;
};

struct Snapshot {
  arch::Arch arch = arch::Arch::kX86_64;
  pid_t pid = 0;  // 0 when the sample names no process
  pid_t tid = 0;
  arch::RegisterSet registers;  // must hold at least the PC and SP
  uint64_t stack_address = 0;   // target address of stack[0]
  std::vector<uint8_t> stack;
  std::vector<SnapshotMapping> mappings;  // any order; must not overlap
};

// The per-sample parts of a SnapshotTarget. Borrowed, not copied: `stack`
// and `process` must stay valid until the next SetSample or ClearSample.
struct SnapshotSample {
  pid_t tid = 0;
  arch::RegisterSet registers;  // must hold at least the PC and SP
  uint64_t stack_address = 0;   // target address of stack[0]
  absl::Span<const uint8_t> stack;
  // The live process's memory for this sample (overlay step 4), or null.
  memory::Memory* process = nullptr;
  // When above stack_address + stack.size(): the sample's stack goes on to
  // here, but only the part in `stack` was loaded (whoever reads it from a
  // file reads what walks usually need). A read in between is served by
  // nothing else and noted (SnapshotTarget::stack_missed), so the caller
  // can load the rest and unwind again.
  uint64_t stack_end = 0;
  // The copy's bytes after `stack`'s last, when it came in two pieces (a
  // server's received message, split between two of its buffers): the
  // copy is `stack` then `stack_tail`, read in place.
  absl::Span<const uint8_t> stack_tail;
};

// A Target over fixed mappings whose one thread is replaced sample by
// sample. Without a sample it has no threads and its memory holds no stack.
class SnapshotTarget : public Target {
 public:
  // InvalidArgument for overlapping or empty mappings.
  static absl::StatusOr<std::unique_ptr<SnapshotTarget>> Create(
      arch::Arch arch, pid_t pid, std::vector<SnapshotMapping> mappings);

  // InvalidArgument (and no sample set) for registers of another arch or
  // without PC or SP, or a stack range that wraps.
  virtual absl::Status SetSample(const SnapshotSample& sample) = 0;
  // Forgets the sample: its stack, registers and process memory.
  virtual void ClearSample() = 0;
  // Whether something read the sample's stack between the loaded part and
  // SnapshotSample::stack_end since SetSample.
  virtual bool stack_missed() const = 0;
};

// One sample that owns its stack copy and process memory.
// InvalidArgument for overlapping or empty mappings, a stack range that
// wraps, registers of another arch or without PC or SP.
absl::StatusOr<std::unique_ptr<Target>> CreateSnapshotTarget(
    Snapshot snapshot, std::unique_ptr<memory::Memory> process_memory);

}  // namespace unwindd::proc

#endif  // UNWINDD_PROC_SNAPSHOT_TARGET_H_
