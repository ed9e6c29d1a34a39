// Times whole commands, in turn, as a user waits for them: from the start
// of the process to its exit, N runs each, taken A B A B ... so that both
// see the same machine, and prints each one's median and minimum wall time
// in microseconds, one line per command:
//
//   wall_runs RUNS -- unwind pid 42 -- eu-stack -p 42
//   median_us 1312.4 min_us 1201.9 unwind pid 42
//   median_us 7013.0 min_us 6520.2 eu-stack -p 42
//
// The clock runs from just before posix_spawn to the return of waitpid,
// as perf stat's does: process creation, exec, the work, exit and reaping,
// and nothing of a shell's own fork (a copy of a large process's page
// tables, which cost bash 0.1-0.4 ms per command on this VM and was added
// to both sides). stdin, stdout and stderr are /dev/null.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

extern char** environ;

namespace {

double NowUs() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

// One run of `argv` (found on PATH unless it has a '/'): its wall time in
// µs, or -1 if it could not be started.
double RunOnce(const std::vector<char*>& argv, posix_spawn_file_actions_t* fa) {
  const double t0 = NowUs();
  pid_t pid;
  if (posix_spawnp(&pid, argv[0], fa, nullptr, argv.data(), environ) != 0) return -1;
  int status;
  while (waitpid(pid, &status, 0) < 0) {
  }
  return NowUs() - t0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4 || std::strcmp(argv[2], "--") != 0) {
    std::fprintf(stderr, "usage: wall_runs RUNS -- CMD ARGS... [-- CMD ARGS...]...\n");
    return 2;
  }
  const int runs = std::atoi(argv[1]);
  std::vector<std::vector<char*>> cmds;
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "--") == 0) {
      cmds.emplace_back();
      continue;
    }
    cmds.back().push_back(argv[i]);
  }
  for (auto& c : cmds) {
    if (c.empty()) {
      std::fprintf(stderr, "wall_runs: an empty command\n");
      return 2;
    }
    c.push_back(nullptr);
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  for (int fd = 0; fd <= 2; ++fd) {
    posix_spawn_file_actions_addopen(&fa, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0);
  }
  std::vector<std::vector<double>> times(cmds.size());
  for (size_t c = 0; c < cmds.size(); ++c) RunOnce(cmds[c], &fa);  // warm caches alike
  for (int r = 0; r < runs; ++r) {
    for (size_t c = 0; c < cmds.size(); ++c) {
      const double us = RunOnce(cmds[c], &fa);
      if (us < 0) {
        std::fprintf(stderr, "wall_runs: cannot start %s\n", cmds[c][0]);
        return 1;
      }
      times[c].push_back(us);
    }
  }
  for (size_t c = 0; c < cmds.size(); ++c) {
    std::vector<double>& t = times[c];
    std::sort(t.begin(), t.end());
    const size_t n = t.size();
    const double median = n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
    std::printf("median_us %.1f min_us %.1f", median, t[0]);
    for (size_t i = 0; cmds[c][i] != nullptr; ++i) std::printf(" %s", cmds[c][i]);
    std::printf("\n");
  }
  posix_spawn_file_actions_destroy(&fa);
  return 0;
}
