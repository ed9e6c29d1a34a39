// perf_replay --socket-floor: what the kernel alone costs a server for a
// recording's requests. The recording's batches, serialised exactly as
// perf_replay sends them to unwindd, go through a plain AF_UNIX stream
// socket (no gRPC, no HTTP/2) to a child process that only reads each
// message and answers it with 16 bytes per sample (about a small error
// answer), with perf_replay's batch size and window. The child's CPU (its
// utime + stime, from wait4) per sample is the floor under any server that
// receives these bytes through a Unix socket: the kernel's copy out of the
// socket, the wake-ups, and the system calls.
#ifndef UNWINDD_TESTDATA_BENCH_PERF_REPLAY_SOCKET_H_
#define UNWINDD_TESTDATA_BENCH_PERF_REPLAY_SOCKET_H_

#include <string>

#include "testdata/bench/perf_replay_producer.h"

namespace unwindd::replay {

// One pass over `file`; PassResult's server figures are the child's.
PassResult RunSocketFloorPass(const ReplayOptions& options, const std::string& file,
                              unwinder::ModuleCache& cache,
                              const locate::LocateOptions& locate);

}  // namespace unwindd::replay

#endif  // UNWINDD_TESTDATA_BENCH_PERF_REPLAY_SOCKET_H_
