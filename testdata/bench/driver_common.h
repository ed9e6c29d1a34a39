// Shared by the per-unwinder drivers of compare.sh: argument parsing,
// stopping the one thread to unwind (every peer unwinds the same stopped
// thread, attached once), timing, and the output format:
//
//   frames 0x7f.. 0x55.. ...
//   ns_per_stack 12345
#ifndef UNWINDD_TESTDATA_BENCH_DRIVER_COMMON_H_
#define UNWINDD_TESTDATA_BENCH_DRIVER_COMMON_H_

#include <errno.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace unwindd::bench {

struct DriverArgs {
  pid_t pid = 0;
  pid_t tid = 0;
  int iterations = 0;
};

inline DriverArgs ParseDriverArgs(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s PID TID ITERATIONS\n", argv[0]);
    std::exit(2);
  }
  DriverArgs a{static_cast<pid_t>(std::atoi(argv[1])),
               static_cast<pid_t>(std::atoi(argv[2])), std::atoi(argv[3])};
  if (a.pid <= 0 || a.tid <= 0 || a.iterations <= 0) {
    std::fprintf(stderr, "%s: bad arguments\n", argv[0]);
    std::exit(2);
  }
  return a;
}

// PTRACE_SEIZE + PTRACE_INTERRUPT, as every peer would have the thread
// stopped by its owner before unwinding it.
inline void StopThread(pid_t tid) {
  if (ptrace(PTRACE_SEIZE, tid, nullptr, nullptr) != 0 ||
      ptrace(PTRACE_INTERRUPT, tid, nullptr, nullptr) != 0) {
    std::perror("ptrace seize");
    std::exit(1);
  }
  int status = 0;
  while (waitpid(tid, &status, __WALL) < 0 && errno == EINTR) {
  }
}

inline void ResumeThread(pid_t tid) { ptrace(PTRACE_DETACH, tid, nullptr, nullptr); }

inline uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

inline void PrintResult(const std::vector<uint64_t>& pcs, uint64_t total_ns,
                        int iterations) {
  std::printf("frames");
  for (uint64_t pc : pcs) std::printf(" 0x%llx", static_cast<unsigned long long>(pc));
  std::printf("\nns_per_stack %llu\n",
              static_cast<unsigned long long>(total_ns / iterations));
}

}  // namespace unwindd::bench

#endif  // UNWINDD_TESTDATA_BENCH_DRIVER_COMMON_H_
