// A core file as a Target: the unwinder sees threads, registers, memory and
// mappings exactly as it does for a live process.
//
//   CoreOptions options;
//   options.lookup.sysroot = "/srv/sysroots/prod";
//   absl::StatusOr<std::unique_ptr<CoreTarget>> t = OpenCore("core.zst",
//   options); ProcessStacks stacks = UnwindTarget(**t, cache, {}); for (const
//   std::string& w : (*t)->report().warnings) ...
//
// Memory is the core's PT_LOAD segments, then — for what the core did not
// dump (read-only code and .eh_frame, segments left out by coredump_filter
// or cut off by truncation) — the mapped files at their NT_FILE offsets.
// A file is used for memory only when its build-id matches the one the
// core's dumped ELF headers record (or when the core records none).
// Compressed cores (.zst, .xz, .lz4, by magic) are decompressed to a sparse
// temporary file first. Thread-safe after OpenCore returns.
#ifndef UNWINDD_PROC_CORE_TARGET_H_
#define UNWINDD_PROC_CORE_TARGET_H_

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "memory/decompress.h"
#include "memory/file_region_memory.h"
#include "proc/core_file.h"
#include "proc/core_modules.h"
#include "proc/core_paths.h"
#include "proc/recorded_files.h"
#include "proc/target.h"

namespace unwindd::proc {

struct CoreOptions {
  FileLookup lookup;
  memory::DecompressOptions decompress;
  // Only these threads (empty: all). NotFound if one is not in the core.
  std::vector<pid_t> tids;
  // The process's mappings and auxiliary vector as recorded elsewhere
  // (systemd-coredump's COREDUMP_PROC_MAPS and COREDUMP_PROC_AUXV), for a
  // core cut short before its NT_FILE note: used only when the core has
  // no NT_FILE (modules_from "proc_maps"); the auxv only when it has no
  // NT_AUXV.
  std::vector<Mapping> proc_maps;
  std::vector<std::pair<uint64_t, uint64_t>> auxv;
};

struct CoreReport {
  std::string core_path;
  memory::Compression compression = memory::Compression::kNone;
  pid_t pid = 0;
  std::string executable;  // recorded path of the main executable
  ModuleSource modules_from = ModuleSource::kNtFile;
  std::vector<CoreFileStatus> files;  // in address order of first mapping
  std::vector<std::string> warnings;
};

class CoreTarget final : public Target {
 public:
  arch::Arch arch() const override { return core_->arch(); }
  pid_t pid() const override { return report_.pid; }
  std::vector<pid_t> Threads() const override { return threads_; }
  absl::StatusOr<arch::RegisterSet> InitialRegisters(pid_t tid) override;
  memory::Memory& memory() override { return *memory_; }
  const std::vector<Mapping>& mappings() const override { return mappings_; }
  std::vector<std::string> FileCandidates(const Mapping& m) const override;
  std::optional<arch::PacMask> pac_mask() const override {
    return core_->pac_mask();
  }
  std::optional<SignalInfo> ThreadSignal(pid_t tid) const override;
  std::string RecordedBuildId(const Mapping& m) const override;

  const CoreReport& report() const { return report_; }
  // The parsed core itself (its notes: auxv, prpsinfo).
  const CoreFile& core() const { return *core_; }

 private:
  friend absl::StatusOr<std::unique_ptr<CoreTarget>> OpenCore(
      const std::string& path, const CoreOptions& options);
  CoreTarget() = default;
  absl::Status Init(const std::string& path, const CoreOptions& options);
  // Mappings from options.proc_maps, for a core without NT_FILE.
  void UseProcMaps(const CoreOptions& options);
  // A library directory path (as a core would record it) of a file with
  // `build_id` under the sysroot (or /); "" if none.
  std::string FindByBuildId(const std::string& build_id);

  CoreOptions options_;
  std::optional<CoreFile> core_;
  std::vector<pid_t> threads_;
  std::vector<Mapping> mappings_;
  std::unique_ptr<memory::Memory> memory_;
  bool build_id_index_built_ = false;
  absl::flat_hash_map<std::string, std::string> build_id_index_;
  absl::flat_hash_map<pid_t, size_t> thread_index_;  // into core_->threads()
  absl::flat_hash_map<std::string, size_t> file_index_;  // into report_.files
  // recorded path -> build-id the core's memory holds for it.
  absl::flat_hash_map<std::string, std::string> recorded_build_ids_;
  CoreReport report_;
};

// InvalidArgument if `path` is not an ELF core; NotFound / PermissionDenied
// for the file; DataLoss for a core with no usable thread; Unimplemented
// for an architecture we do not unwind.
absl::StatusOr<std::unique_ptr<CoreTarget>> OpenCore(
    const std::string& path, const CoreOptions& options);

}  // namespace unwindd::proc

#endif  // UNWINDD_PROC_CORE_TARGET_H_
