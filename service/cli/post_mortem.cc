#include "service/cli/post_mortem.h"

#include <cstdio>
#include <memory>

#include "absl/strings/string_view.h"
#include "service/cli/core_backtrace.h"
#include "service/cli/jit_code.h"
#include "service/cli/minidump_out.h"
#include "service/cli/output.h"
#include "service/common/crash_signature.h"
#include "service/common/packages.h"
#include "unwinder/module_cache.h"
#include "unwinder/unwinder.h"

namespace unwindd::service {
namespace {

void PrintErr(absl::string_view prefix, absl::string_view msg) {
  std::fprintf(stderr, "unwind: %.*s%.*s\n", static_cast<int>(prefix.size()),
               prefix.data(), static_cast<int>(msg.size()), msg.data());
}

}  // namespace

int RunPostMortem(const Command& cmd, Binaries& binaries, PostMortem& pm,
                  const std::atomic<bool>* cancel) {
  // No row cache: each thread is walked once (main.cc says why).
  unwinder::ModuleCache cache(unwinder::ModuleCache::kDefaultMaxBytes, /*max_row_bytes=*/0);
  unwinder::UnwindOptions unwind_options;
  if (cmd.max_frames > 0) unwind_options.max_frames = cmd.max_frames;
  unwind_options.sources = cmd.sources;
  unwind_options.cancel = cancel;
  unwind_options.locate = &binaries.locate_options();
  // With the code a JIT runtime announced (perf jitdump files it mapped,
  // the GDB JIT interface) where a frame ran such code.
  unwinder::ProcessStacks stacks =
      UnwindWithAnnouncedCode(*pm.target, cache, unwind_options, &pm.summary.warnings);
  // Files the target's own lookup missed may have been found since
  // (build-id directories, debuginfod).
  NoteFilesFoundWhileUnwinding(stacks, pm.summary);
  // Every problem goes to stderr too, where a person running the command
  // sees it whatever the output format.
  for (const std::string& w : pm.summary.warnings) PrintErr("warning: ", w);
  if (cancel != nullptr && cancel->load()) {
    PrintErr("", "interrupted");
    return 1;
  }
  if (!cmd.minidump_out.empty()) {
    if (pm.minidump_info == nullptr) {
      PrintErr("", "--minidump is not available for this command");
      return 1;
    }
    if (int rc = WriteMinidumpReport(*pm.target, *pm.minidump_info, cmd, stacks,
                                     pm.compared_bytes, pm.compared);
        rc != 0) {
      return rc;
    }
  }
  FrameSymbols symbols;
  if (cmd.symbols) symbols = binaries.Symbolize(stacks);
  const FrameSymbols* sym = cmd.symbols ? &symbols : nullptr;
  const CrashSignature signature = ComputeSignature(stacks);
  if (cmd.core_backtrace) {
    const std::string out = FormatCoreBacktrace(stacks, pm.summary.executable, signature, sym);
    std::fwrite(out.data(), 1, out.size(), stdout);
  } else {
    const ModulePackages packages = FindModulePackages(stacks, pm.target, &cache);
    const OutputExtras extras{.core = &pm.summary, .symbols = sym,
                              .signature = &signature, .packages = &packages};
    // Written as it is made (output.h).
    WriteStacks(stacks, extras, cmd.format == Format::kJson, stdout);
  }
  return std::fflush(stdout) == 0 ? 0 : 1;
}

}  // namespace unwindd::service
