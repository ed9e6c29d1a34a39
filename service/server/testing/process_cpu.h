// What the snapshot-stream measurements read about the two processes: the
// server's CPU time from /proc (utime + stime of every thread, dead ones
// included), the client's own, and which process listens on a Unix socket.
// Not test-only: perf_replay (testdata/bench) is a benchmark tool that
// compare.sh runs.
//
//   pid_t server = *ListenerPid("/tmp/x/unwindd.sock");
//   double cpu0 = ProcessCpuSeconds(server);
//   ... stream samples ...
//   double server_cpu = ProcessCpuSeconds(server) - cpu0;
#ifndef UNWINDD_SERVICE_SERVER_TESTING_PROCESS_CPU_H_
#define UNWINDD_SERVICE_SERVER_TESTING_PROCESS_CPU_H_

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace unwindd::service::testing {

// utime + stime of `pid` (every thread of it, exited ones included), in
// seconds: its process CPU clock (clock_getcpuclockid, ns resolution), or
// if that cannot be read, fields 14 and 15 of /proc/PID/stat (10 ms ticks
// here); -1 if neither can.
double ProcessCpuSeconds(pid_t pid);

// Context switches of every live thread of `pid` (voluntary and not, from
// /proc/PID/task/*/status): how often the server went to sleep and woke,
// which on this VM costs more than a small sample's unwind. Threads that
// exited are not counted; -1 if nothing can be read.
int64_t ProcessContextSwitches(pid_t pid);

// This process's user + system CPU time (getrusage), in seconds.
double SelfCpuSeconds();

// Field 22 of /proc/PID/stat (starttime, clock ticks after boot), 0 if
// unreadable.
uint64_t ProcessStartTime(pid_t pid);

// The process that listens on the Unix socket at `path`: connects and asks
// the kernel for the peer's credentials (SO_PEERCRED, which for a listening
// socket are its creator's as of listen()). Errors from socket/connect.
absl::StatusOr<pid_t> ListenerPid(const std::string& path);

}  // namespace unwindd::service::testing

#endif  // UNWINDD_SERVICE_SERVER_TESTING_PROCESS_CPU_H_
