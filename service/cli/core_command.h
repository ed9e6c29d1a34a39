// `unwind core CORE [--exe=PATH] [--sysroot=DIR] [--path-map=OLD=NEW]...`:
// opens the core (decompressing .zst/.xz/.lz4), unwinds every thread and
// prints the same output as `unwind pid`, plus what docs/cores.md "Core files"
// describes (a "core" object, per-thread "signal", per-frame file status).
// `unwind minidump FILE` does the same for a minidump
// (docs/crash-pipelines.md), with a "minidump" object.
//
//   return RunCore(cmd, &interrupted);   // exit code: 0 ok, 1 error
#ifndef UNWINDD_SERVICE_CLI_CORE_COMMAND_H_
#define UNWINDD_SERVICE_CLI_CORE_COMMAND_H_

#include <atomic>
#include <string>
#include <vector>

#include "proc/core_target.h"
#include "service/cli/args.h"
#include "service/cli/output.h"

namespace unwindd::service {

// Prints the result to stdout, warnings and errors to stderr.
int RunCore(const Command& cmd, const std::atomic<bool>* cancel);
int RunMinidump(const Command& cmd, const std::atomic<bool>* cancel);

// RunCore for a core found elsewhere (a systemd-coredump entry):
// `display_name` names it in the output, `metadata` is printed with it,
// `base` (may be null) carries extra CoreOptions (maps and auxv from the
// journal).
int RunCoreFile(const Command& cmd, const std::string& core_path,
                const std::string& display_name,
                std::vector<CoreSummary::Fact> metadata,
                const std::atomic<bool>* cancel, const proc::CoreOptions* base);

}  // namespace unwindd::service

#endif  // UNWINDD_SERVICE_CLI_CORE_COMMAND_H_
