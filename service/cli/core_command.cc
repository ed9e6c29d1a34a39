#include "service/cli/core_command.h"

#include <sys/stat.h>

#include <cstdio>
#include <memory>
#include <string>

#include "absl/strings/string_view.h"
#include "proc/minidump/minidump_target.h"
#include "service/cli/binaries.h"
#include "service/cli/minidump_out.h"
#include "service/cli/post_mortem.h"

namespace unwindd::service {
namespace {

void PrintErr(absl::string_view msg) {
  std::fprintf(stderr, "unwind: %.*s\n", static_cast<int>(msg.size()), msg.data());
}

proc::FileLookup LookupOf(const Command& cmd) {
  proc::FileLookup lookup;
  lookup.exe = cmd.exe;
  lookup.sysroot = cmd.sysroot;
  lookup.path_map = cmd.path_maps;
  return lookup;
}

// The core's size on disk: what a pipeline would ship instead.
uint64_t FileSize(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

}  // namespace

int RunCoreFile(const Command& cmd, const std::string& core_path,
                const std::string& display_name, std::vector<CoreSummary::Fact> metadata,
                const std::atomic<bool>* cancel, const proc::CoreOptions* base) {
  absl::StatusOr<std::unique_ptr<Binaries>> binaries = Binaries::FromCommand(cmd);
  if (!binaries.ok()) {
    PrintErr(binaries.status().message());
    return 1;
  }
  proc::CoreOptions options;
  if (base != nullptr) options = *base;
  options.lookup = LookupOf(cmd);
  options.tids = cmd.tids;
  absl::StatusOr<std::unique_ptr<proc::CoreTarget>> target =
      proc::OpenCore(core_path, options);
  if (!target.ok()) {
    PrintErr(target.status().message());
    return 1;
  }
  PostMortem pm;
  pm.target = target->get();
  pm.summary = SummarizeCore((*target)->report(), display_name);
  pm.summary.metadata = std::move(metadata);
  const proc::minidump::ProcessInfo info = CoreProcessInfo((*target)->core());
  pm.minidump_info = &info;
  pm.compared_bytes = FileSize(core_path);
  return RunPostMortem(cmd, **binaries, pm, cancel);
}

int RunCore(const Command& cmd, const std::atomic<bool>* cancel) {
  return RunCoreFile(cmd, cmd.core, cmd.core, {}, cancel, nullptr);
}

int RunMinidump(const Command& cmd, const std::atomic<bool>* cancel) {
  absl::StatusOr<std::unique_ptr<Binaries>> binaries = Binaries::FromCommand(cmd);
  if (!binaries.ok()) {
    PrintErr(binaries.status().message());
    return 1;
  }
  proc::MinidumpOptions options;
  options.lookup = LookupOf(cmd);
  options.tids = cmd.tids;
  absl::StatusOr<std::unique_ptr<proc::MinidumpTarget>> target =
      proc::OpenMinidump(cmd.core, options);
  if (!target.ok()) {
    PrintErr(target.status().message());
    return 1;
  }
  PostMortem pm;
  pm.target = target->get();
  pm.summary = SummarizeMinidump((*target)->report(), cmd.core);
  return RunPostMortem(cmd, **binaries, pm, cancel);
}

}  // namespace unwindd::service
