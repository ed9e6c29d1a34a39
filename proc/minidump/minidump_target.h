// A minidump (Breakpad's or Crashpad's, from Linux or Android) as a
// proc::Target: the unwinder sees threads, registers, memory and mappings
// exactly as it does for a core, and finds each module's file by the
// build-id the minidump recorded, the way it does for cores.
//
//   MinidumpOptions options;
//   options.lookup.sysroot = "/srv/sysroots/prod";
//   absl::StatusOr<std::unique_ptr<MinidumpTarget>> t =
//       OpenMinidump("crash.dmp", options);
//   ProcessStacks stacks = UnwindTarget(**t, cache, {});
//
// Threads and registers come from the thread list; the crashing thread's
// from the exception stream, which holds its registers at the fault (the
// thread list's copy is often the signal handler's). Mappings come from
// the Linux maps stream (0x47670009) when there is one, else from the
// module list. Each module's build-id is the raw GNU build-id of its
// CodeView record ('BpEL'). Memory is the dumped ranges (MemoryList,
// Memory64List, thread stacks), then the files found for the modules: a
// minidump holds no code, so .eh_frame and the rest come from the files.
#ifndef UNWINDD_PROC_MINIDUMP_MINIDUMP_TARGET_H_
#define UNWINDD_PROC_MINIDUMP_MINIDUMP_TARGET_H_

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "memory/decompress.h"
#include "proc/core_paths.h"
#include "proc/minidump/reader.h"
#include "proc/recorded_files.h"
#include "proc/target.h"

namespace unwindd::proc {

struct MinidumpOptions {
  FileLookup lookup;
  memory::DecompressOptions decompress;
  // Only these threads (empty: all). NotFound if one is not in the file.
  std::vector<pid_t> tids;
};

struct MinidumpReport {
  std::string path;
  memory::Compression compression = memory::Compression::kNone;
  pid_t pid = 0;
  std::string executable;    // recorded path of the main executable
  std::string modules_from;  // "linux_maps" or "module_list"
  std::vector<CoreFileStatus> files;  // in address order
  std::vector<std::string> warnings;
  // What the file says about where it came from.
  std::string os;        // "Linux 6.1.0-18-amd64 #1 SMP ... x86_64"
  std::string platform;  // "linux", "android", or the MDOSPlatform number
  std::string distribution;  // lsb-release's DISTRIB_DESCRIPTION
  std::string command_line;  // the cmdline stream, NULs as spaces
  std::optional<pid_t> crash_tid;  // the exception stream's thread
  // The exception stream's code when it is not a signal ("dump requested").
  std::string exception;
};

class MinidumpTarget final : public Target {
 public:
  arch::Arch arch() const override { return arch_; }
  pid_t pid() const override { return report_.pid; }
  std::vector<pid_t> Threads() const override { return threads_; }
  absl::StatusOr<arch::RegisterSet> InitialRegisters(pid_t tid) override;
  memory::Memory& memory() override { return *memory_; }
  const std::vector<Mapping>& mappings() const override { return mappings_; }
  std::vector<std::string> FileCandidates(const Mapping& m) const override;
  std::optional<SignalInfo> ThreadSignal(pid_t tid) const override;
  std::string RecordedBuildId(const Mapping& m) const override;

  const MinidumpReport& report() const { return report_; }
  const minidump::MinidumpFile& file() const { return *file_; }

 private:
  friend absl::StatusOr<std::unique_ptr<MinidumpTarget>> OpenMinidump(
      const std::string& path, const MinidumpOptions& options);
  MinidumpTarget() = default;
  absl::Status Init(const std::string& path, const MinidumpOptions& options);
  absl::Status ChooseArch();
  void BuildMappings();
  void FindExecutable();
  void Describe();
  absl::Status ChooseThreads(const std::vector<pid_t>& wanted);

  MinidumpOptions options_;
  std::optional<minidump::MinidumpFile> file_;
  arch::Arch arch_ = arch::Arch::kX86_64;
  std::vector<pid_t> threads_;
  absl::flat_hash_map<pid_t, size_t> thread_index_;  // into file_->threads()
  std::vector<Mapping> mappings_;
  std::unique_ptr<memory::Memory> memory_;
  absl::flat_hash_map<std::string, std::string> recorded_build_ids_;
  absl::flat_hash_map<std::string, size_t> file_index_;  // into report_.files
  MinidumpReport report_;
};

// DataLoss if `path` is not a minidump or is malformed beyond use;
// NotFound / PermissionDenied for the file; Unimplemented for an
// architecture we do not unwind.
absl::StatusOr<std::unique_ptr<MinidumpTarget>> OpenMinidump(
    const std::string& path, const MinidumpOptions& options);

// Whether the first bytes of a file are a minidump's ("MDMP").
bool LooksLikeMinidump(absl::Span<const uint8_t> head);

}  // namespace unwindd::proc

#endif  // UNWINDD_PROC_MINIDUMP_MINIDUMP_TARGET_H_
