// `unwind perf PERF_DATA [--format=perf-script|json|pprof|folded] [-o FILE]
//  [--pid=PID]... [--tid=TID]... [--comm=NAME]... [--sources=LIST]
//  [--max-frames=N] [--jobs=N] [--sysroot=DIR]`:
// every sample of a `perf record --call-graph dwarf` recording (a file, or
// "-" for a pipe-mode stream on stdin) unwound in-process, through the
// same unwinder and snapshot target as unwindd's UnwindSnapshots, and
// written as `perf script` would print it, as JSON, or as a profile.
//
//   return RunPerf(cmd, &interrupted);   // exit code: 0 ok, 1 error
#ifndef UNWINDD_SERVICE_CLI_PERF_PERF_COMMAND_H_
#define UNWINDD_SERVICE_CLI_PERF_PERF_COMMAND_H_

#include <atomic>

#include "service/cli/args.h"

namespace unwindd::service::perf {

// Samples to stdout or cmd.output, warnings and a summary to stderr.
int RunPerf(const Command& cmd, const std::atomic<bool>* cancel);

}  // namespace unwindd::service::perf

#endif  // UNWINDD_SERVICE_CLI_PERF_PERF_COMMAND_H_
