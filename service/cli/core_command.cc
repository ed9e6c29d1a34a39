#include "service/cli/core_command.h"

#include <cstdio>
#include <memory>
#include <string>

#include "absl/strings/string_view.h"
#include "service/cli/binaries.h"
#include "service/cli/jit_code.h"
#include "unwinder/module_cache.h"
#include "unwinder/unwinder.h"

namespace unwindd::service {
namespace {

void PrintErr(absl::string_view prefix, absl::string_view msg) {
  std::fprintf(stderr, "unwind: %.*s%.*s\n", static_cast<int>(prefix.size()),
               prefix.data(), static_cast<int>(msg.size()), msg.data());
}

}  // namespace

int RunCore(const Command& cmd, const std::atomic<bool>* cancel) {
  absl::StatusOr<std::unique_ptr<Binaries>> binaries = Binaries::FromCommand(cmd);
  if (!binaries.ok()) {
    PrintErr("", binaries.status().message());
    return 1;
  }
  proc::CoreOptions options;
  options.lookup.exe = cmd.exe;
  options.lookup.sysroot = cmd.sysroot;
  options.lookup.path_map = cmd.path_maps;
  options.tids = cmd.tids;
  absl::StatusOr<std::unique_ptr<proc::CoreTarget>> target =
      proc::OpenCore(cmd.core, options);
  if (!target.ok()) {
    PrintErr("", target.status().message());
    return 1;
  }
  CoreSummary summary = SummarizeCore((*target)->report(), (*target)->report().core_path);

  unwinder::ModuleCache cache;
  unwinder::UnwindOptions unwind_options;
  if (cmd.max_frames > 0) unwind_options.max_frames = cmd.max_frames;
  unwind_options.sources = cmd.sources;
  unwind_options.cancel = cancel;
  unwind_options.locate = &(*binaries)->locate_options();
  std::unique_ptr<proc::Target> jit = WithAnnouncedCode(**target, &summary.warnings);
  unwinder::ProcessStacks stacks =
      unwinder::UnwindTarget(jit ? *jit : **target, cache, unwind_options);
  // Files the core's own lookup missed may have been found since (build-id
  // directories, debuginfod).
  NoteFilesFoundWhileUnwinding(stacks, summary);
  // Every problem goes to stderr too, where a person running the command
  // sees it whatever the output format.
  for (const std::string& w : summary.warnings) PrintErr("warning: ", w);
  if (cancel != nullptr && cancel->load()) {
    PrintErr("", "interrupted");
    return 1;
  }
  FrameSymbols symbols;
  if (cmd.symbols) symbols = (*binaries)->Symbolize(stacks);
  const FrameSymbols* sym = cmd.symbols ? &symbols : nullptr;
  std::string out = cmd.format == Format::kJson ? FormatJson(stacks, &summary, sym)
                                                : FormatText(stacks, &summary, sym);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return std::fflush(stdout) == 0 ? 0 : 1;
}

}  // namespace unwindd::service
