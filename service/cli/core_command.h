// `unwind core CORE [--exe=PATH] [--sysroot=DIR] [--path-map=OLD=NEW]...`:
// opens the core (decompressing .zst/.xz/.lz4), unwinds every thread and
// prints the same output as `unwind pid`, plus what README "Core files"
// describes (a "core" object, per-thread "signal", per-frame file status).
//
//   return RunCore(cmd, &interrupted);   // exit code: 0 ok, 1 error
#ifndef UNWINDD_SERVICE_CLI_CORE_COMMAND_H_
#define UNWINDD_SERVICE_CLI_CORE_COMMAND_H_

#include <atomic>

#include "proc/core_target.h"
#include "service/cli/args.h"
#include "service/cli/output.h"

namespace unwindd::service {

// Prints the result to stdout, warnings and errors to stderr.
int RunCore(const Command& cmd, const std::atomic<bool>* cancel);

}  // namespace unwindd::service

#endif  // UNWINDD_SERVICE_CLI_CORE_COMMAND_H_
