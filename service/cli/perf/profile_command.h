// `unwind profile --pid=PID [--duration=S] [--frequency=HZ] [-o FILE]
//  [--format=pprof|folded|json|perf-script] [--sources=LIST] [--jobs=N]`:
// a whole profiler in one command. It samples every thread of PID with
// perf_event_open (cpu-clock at HZ, the user registers and a copy of the
// user stack: proc/perf/live_sampler.h), unwinds the samples as it reads
// the ring buffers (the pipeline `unwind perf` uses), and when the
// duration is over, SIGINT or SIGTERM arrives or the process exits, writes
// the profile (pprof by default). The process is never stopped or traced.
//
//   return RunProfile(cmd, &interrupted);   // exit code: 0 ok, 1 error
#ifndef UNWINDD_SERVICE_CLI_PERF_PROFILE_COMMAND_H_
#define UNWINDD_SERVICE_CLI_PERF_PROFILE_COMMAND_H_

#include <atomic>

#include "service/cli/args.h"

namespace unwindd::service::perf {

// `interrupted` ends the sampling (not an error: the profile is written).
int RunProfile(const Command& cmd, const std::atomic<bool>* interrupted);

}  // namespace unwindd::service::perf

#endif  // UNWINDD_SERVICE_CLI_PERF_PROFILE_COMMAND_H_
