// An ELF image (executable, shared library, or the vDSO read from target
// memory) with its unwind information, opened once and shared by every
// request and target that maps it (see module_cache.h).
//
//   absl::StatusOr<std::shared_ptr<Module>> m = Module::OpenFile(path);
//   uint64_t bias = *(*m)->LoadBias(mapping.start, mapping.offset);
//   absl::StatusOr<ModuleRow> row = (*m)->FindRow(frame.Rebased(bias));
//
// Addresses given to and returned by a Module are in the *file's* address
// space (p_vaddr / sh_addr); the load bias converts target addresses.
// Thread-safe.
#ifndef UNWINDD_UNWINDER_MODULE_H_
#define UNWINDD_UNWINDER_MODULE_H_

#include <sys/stat.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "arch/arch.h"
#include "arch/frame_address.h"
#include "memory/file_mapping.h"
#include "unwinder/cfi/cfi_section.h"
#include "unwinder/cfi/eh_frame_hdr.h"
#include "unwinder/cfi/row.h"
#include "unwinder/debug_info.h"
#include "unwinder/go_stack_switch.h"
#include "unwinder/method.h"
#include "unwinder/row_budget.h"
#include "unwinder/row_key.h"
#include "unwinder/sframe/section.h"
#include "unwinder/source_policy.h"

typedef struct Elf Elf;

namespace unwindd::unwinder {

// A row, the source of the policy that produced it, and the method frames
// unwound with it report. They differ for SFrame's SFRAME_F_FRAME_POINTER:
// source kSframe, method kFramePointer. When such a row turns out unusable
// for a frame, the sources after `source` are the ones left to try.
struct ModuleRow {
  Row row;
  Source source = Source::kEhFrame;
  Method method = Method::kEhFrame;
};

class Module {
 public:
  // Opens an ELF file. NotFound / PermissionDenied for the file itself,
  // DataLoss if it is not a well-formed ELF file.
  static absl::StatusOr<std::shared_ptr<Module>> OpenFile(
      const std::string& path);
  // The same over a file the caller has opened (and fstat'ed into `st`):
  // the module owns `fd` from here on, whatever the result.
  static absl::StatusOr<std::shared_ptr<Module>> OpenFd(
      int fd, const struct stat& st, const std::string& path);
  // An ELF image held in memory (the vDSO copied out of the target).
  static absl::StatusOr<std::shared_ptr<Module>> FromImage(
      std::vector<uint8_t> image, std::string name);

  ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  const std::string& name() const { return name_; }
  // Lowercase hex of the NT_GNU_BUILD_ID note; empty if there is none.
  const std::string& build_id() const { return build_id_; }
  arch::Arch arch() const { return arch_; }
  // Bytes of the file image (mapped, not heap) — for cache accounting.
  size_t image_size() const { return image_size_; }

  // The load bias for a mapping of this file at `map_start` with file offset
  // `map_offset`: target address = file address + bias. NotFound if no
  // PT_LOAD segment maps that offset.
  absl::StatusOr<uint64_t> LoadBias(uint64_t map_start,
                                    uint64_t map_offset) const;

  // The unwind row for the frame at `at` (file addresses) from the first
  // source of `policy` that covers it (source_policy.h): .eh_frame (through
  // .eh_frame_hdr, else a built index), .debug_frame, .sframe (and, when its
  // header has SFRAME_F_FRAME_POINTER, the frame-pointer chain for PCs it
  // does not cover), or the frame-pointer chain where the function's
  // prologue shows it keeps one (arch/prologue.h; in a module without any
  // unwind info, always). Cached per (at, policy). NotFound when no source
  // covers it; otherwise the first source's error (DataLoss / Unimplemented
  // for bad unwind info).
  absl::StatusOr<ModuleRow> FindRow(arch::FrameAddress at,
                                    const SourcePolicy& policy);
  absl::StatusOr<ModuleRow> FindRow(arch::FrameAddress at) {
    return FindRow(at, SourcePolicy());
  }
  // The same row without copying it: the step loop's hot path. The row stays
  // valid for as long as the caller holds it, even if the cache drops it.
  absl::StatusOr<std::shared_ptr<const ModuleRow>> FindSharedRow(
      arch::FrameAddress at, const SourcePolicy& policy);

  // The file's bytes at file address `vaddr` up to the end of the PT_LOAD
  // segment's file data; empty if no segment maps it. Code read from here
  // costs no syscall, unlike reading it from the target.
  absl::Span<const uint8_t> ImageBytesAt(uint64_t vaddr) const {
    return BytesAtVaddr(vaddr);
  }

  // The file's note areas: its SHT_NOTE sections, or its PT_NOTE segments
  // when it has no note section (as readelf -n looks). For notes the
  // unwinder does not read itself, such as the package note
  // (proc/package_note.h), without opening the file again. The bytes may
  // be zeros of a page truncated since: what is read from them counts only
  // while changed() is false afterwards.
  std::vector<absl::Span<const uint8_t>> NoteAreas() const;

  // [start, end) of the function containing `pc` per any FDE (.eh_frame,
  // .debug_frame, .sframe); nullopt if none covers it.
  std::optional<std::pair<uint64_t, uint64_t>> FunctionBounds(uint64_t pc);

  // Separate debug information (debug_info.h). `loader` runs at most once,
  // the first time a lookup whose policy lists debug_frame finds no row in
  // the file's own .eh_frame or .debug_frame (the row it would return comes
  // from a later source, or there is none); from then on the debug file's
  // .debug_frame answers as the file's would. Set before the module is
  // shared (ModuleCache does). A file with its own .debug_frame never loads
  // it.
  void set_debug_info_loader(DebugInfoLoader loader);
  // Uses `info` now (tests, and callers that located it themselves).
  absl::Status AttachDebugInfo(const DebugInfo& info);
  // The debug information in use; nullopt if none (yet).
  std::optional<DebugInfo> debug_info();
  // Why there is none: not looked for yet (NotFound "not needed"), or the
  // loader's / the debug file's error. OK when there is.
  absl::Status debug_info_status();

  // Rows cached from now on draw on `budget` (row_budget.h); a row that
  // does not fit is served uncached and every module of the budget drops
  // its cached rows. Set by ModuleCache before the module is shared.
  void set_row_budget(std::shared_ptr<RowBudget> budget);
  // What one cached row costs: the row, make_shared's control block, and
  // the hash table's slot (key, pointer, control byte, load-factor slack).
  static constexpr uint64_t kRowCacheEntryBytes = sizeof(ModuleRow) + 16 + 2 * 40;
  // Bytes this module's row cache holds.
  uint64_t row_cache_bytes();
  void DropCachedRows();

  // Whether the file was found to have changed since it was opened: a read
  // of it hit a page past its new end (memory/file_mapping.h), or the cache
  // saw the same inode with another size or time (MarkChanged). Lookups then
  // fail with DataLossError("FILE changed while it was read"), and the
  // cache evicts the module. Lock-free.
  bool changed() const;
  void MarkChanged();

  bool has_eh_frame() const { return eh_frame_.has_value(); }
  size_t eh_frame_size() const { return eh_frame_ ? eh_frame_->data().size() : 0; }
  bool has_eh_frame_hdr() const { return eh_frame_hdr_.has_value(); }
  bool has_debug_frame() const { return debug_frame_.has_value(); }
  bool has_sframe() const { return sframe_ != nullptr; }
  // The parsed .sframe section (null if there is none or it is unusable:
  // then sframe_status() says why).
  const sframe::SframeSection* sframe() const { return sframe_.get(); }
  const absl::Status& sframe_status() const { return sframe_status_; }

 public:
  // Go's stack-switch function at `vaddr` (file address), or "" (a Go
  // binary's; go_stack_switch.h).
  absl::string_view GoStackSwitchAt(uint64_t vaddr) const {
    return go_switches_.empty() ? absl::string_view() : go_switches_.At(vaddr);
  }

 private:
  struct Segment {
    uint64_t vaddr, memsz, offset, filesz;
    bool exec = false;  // PF_X
  };
  // The executable sections' (address, size): what InCode checks.
  static constexpr size_t kMaxCodeSections = 256;
  std::vector<std::pair<uint64_t, uint64_t>> code_sections_;
  // File offset and size of each SHT_NOTE section and PT_NOTE segment (at
  // most kMaxNoteAreas of each).
  static constexpr size_t kMaxNoteAreas = 64;
  std::vector<std::pair<uint64_t, uint64_t>> note_sections_, note_segments_;
  GoStackSwitches go_switches_;  // set once by LoadSections, for a Go binary only

  // What fstat said of the file when it was opened (0 for images).
  struct FileStamp {
    uint64_t dev = 0, ino = 0;
    int64_t size = 0, mtime_s = 0, mtime_ns = 0, ctime_s = 0, ctime_ns = 0;
    static FileStamp Of(const struct stat& st);
    bool operator==(const FileStamp& o) const {
      return dev == o.dev && ino == o.ino && size == o.size && mtime_s == o.mtime_s &&
             mtime_ns == o.mtime_ns && ctime_s == o.ctime_s && ctime_ns == o.ctime_ns;
    }
  };

  Module() = default;
  // changed(), or the debug file's mapping changed. Under mu_.
  bool ChangedLocked() const;
  absl::Status ChangedError() const;
  absl::Status Init(Elf* elf, std::string name);
  absl::Status LoadSections();
  absl::Span<const uint8_t> BytesAtVaddr(uint64_t vaddr) const;
  // Whether `vaddr` (file address) is in the module's code: an
  // SHF_EXECINSTR section, or without section headers a PF_X PT_LOAD.
  bool InCode(uint64_t vaddr) const;
  void LoadSframe(absl::Span<const uint8_t> bytes, uint64_t vaddr);
  absl::StatusOr<ModuleRow> FindRowUncached(arch::FrameAddress at,
                                            const SourcePolicy& policy);
  absl::StatusOr<ModuleRow> FindRowFrom(Source source, arch::FrameAddress at);
  absl::StatusOr<Fde> FindEhFrameFde(uint64_t pc);
  absl::StatusOr<ModuleRow> FindRowInEhFrame(uint64_t pc);
  absl::StatusOr<ModuleRow> FindRowInDebugFrame(uint64_t pc);
  absl::StatusOr<ModuleRow> FindRowInSframe(uint64_t pc);
  absl::StatusOr<ModuleRow> FindFramePointerRow(arch::FrameAddress at);
  std::optional<std::pair<uint64_t, uint64_t>> FunctionBoundsLocked(uint64_t pc);
  void ClearRowsLocked();
  // Whether `row` (for `policy`) means the file's own CFI missed the PC and
  // the debug information should be loaded first.
  bool WantsDebugInfoLocked(const absl::StatusOr<ModuleRow>& row,
                            const SourcePolicy& policy) const;
  void LoadDebugInfo();
  uint64_t LowestLoadVaddr() const;
  absl::Status InstallDebugElfLocked(std::unique_ptr<DebugElf> debug);

  std::string name_;
  std::string build_id_;
  arch::Arch arch_ = arch::Arch::kX86_64;
  int address_size_ = 8;  // from EI_CLASS: the arch's, or 4 for x32
  Elf* elf_ = nullptr;
  int fd_ = -1;
  std::vector<uint8_t> owned_image_;  // FromImage only
  // The file's bytes (OpenFd only), guarded against truncation.
  std::unique_ptr<memory::FileMapping> mapping_;
  FileStamp stat_;
  absl::Span<const uint8_t> raw_;     // whole file image
  size_t image_size_ = 0;
  std::vector<Segment> loads_;
  std::optional<EhFrameHdr> eh_frame_hdr_;
  std::optional<CfiSection> eh_frame_;
  std::optional<CfiSection> debug_frame_;
  std::vector<uint8_t> debug_frame_storage_;  // decompressed .debug_frame
  uint16_t machine_ = 0;  // e_machine and EI_CLASS, to check debug files
  uint8_t elf_class_ = 0;
  // The file's own .debug_frame (then no debug information is loaded).
  bool own_debug_frame_ = false;
  // Separate debug information: the loader, whether it ran, its result.
  DebugInfoLoader debug_loader_;
  std::mutex debug_load_mu_;  // one loader run at a time; taken before mu_
  bool debug_tried_ = false;  // under mu_
  absl::Status debug_status_ = absl::NotFoundError("not needed");  // under mu_
  std::unique_ptr<DebugElf> debug_elf_;  // under mu_; debug_frame_ points in
  int64_t debug_delta_ = 0;  // debug-file address - file address
  std::unique_ptr<sframe::SframeSection> sframe_;
  absl::Status sframe_status_ = absl::NotFoundError("no .sframe section");

  // Guards the lazily built CFI indexes and the row cache. A std::mutex, not
  // an absl::Mutex: Debian's Abseil keeps deadlock-detection bookkeeping on
  // every absl::Mutex lock, which cost more than the cached lookup itself.
  std::mutex mu_;
  // Keyed by the frame's file address and the policy (row_key.h).
  absl::flat_hash_map<RowKey, std::shared_ptr<const ModuleRow>> rows_;
  // Each entry of rows_ took kRowCacheEntryBytes from it; null: only
  // kMaxCachedRows bounds rows_.
  std::shared_ptr<RowBudget> row_budget_;
};

}  // namespace unwindd::unwinder

#endif  // UNWINDD_UNWINDER_MODULE_H_
