// Times whole commands, in turn, as a user waits for them: from the start
// of the process to its exit, N runs each, taken A B A B ... so that both
// see the same machine, and prints each one's median and minimum wall time
// in microseconds, and the medians of what the kernel counted for the
// process (wait4's rusage: CPU time, user + system, of all its threads;
// minor page faults; peak resident set), one line per command:
//
//   wall_runs RUNS -- unwind pid 42 -- eu-stack -p 42
//   median_us 1312.4 min_us 1201.9 cpu_us 1104.0 faults 91 maxrss_kb 4410 unwind pid 42
//   median_us 7013.0 min_us 6520.2 cpu_us 6550.0 faults 1630 maxrss_kb 21500 eu-stack -p 42
//
// The clock runs from just before posix_spawn to the return of waitpid,
// as perf stat's does: process creation, exec, the work, exit and reaping,
// and nothing of a shell's own fork (a copy of a large process's page
// tables, which cost bash 0.1-0.4 ms per command on this VM and was added
// to both sides). stdin, stdout and stderr are /dev/null.
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
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

struct Run {
  double wall_us = -1;  // -1: could not be started
  double cpu_us = 0;
  double faults = 0;
  double maxrss_kb = 0;
};

// One run of `argv` (found on PATH unless it has a '/').
Run RunOnce(const std::vector<char*>& argv, posix_spawn_file_actions_t* fa) {
  Run out;
  const double t0 = NowUs();
  pid_t pid;
  if (posix_spawnp(&pid, argv[0], fa, nullptr, argv.data(), environ) != 0) return out;
  int status;
  rusage ru{};
  while (wait4(pid, &status, 0, &ru) < 0) {
  }
  out.wall_us = NowUs() - t0;
  out.cpu_us = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 + ru.ru_utime.tv_usec +
               ru.ru_stime.tv_usec;
  out.faults = static_cast<double>(ru.ru_minflt);
  out.maxrss_kb = static_cast<double>(ru.ru_maxrss);
  return out;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
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
  std::vector<std::vector<Run>> runs_of(cmds.size());
  for (size_t c = 0; c < cmds.size(); ++c) RunOnce(cmds[c], &fa);  // warm caches alike
  for (int r = 0; r < runs; ++r) {
    for (size_t c = 0; c < cmds.size(); ++c) {
      const Run run = RunOnce(cmds[c], &fa);
      if (run.wall_us < 0) {
        std::fprintf(stderr, "wall_runs: cannot start %s\n", cmds[c][0]);
        return 1;
      }
      runs_of[c].push_back(run);
    }
  }
  for (size_t c = 0; c < cmds.size(); ++c) {
    std::vector<double> wall, cpu, faults, rss;
    for (const Run& r : runs_of[c]) {
      wall.push_back(r.wall_us);
      cpu.push_back(r.cpu_us);
      faults.push_back(r.faults);
      rss.push_back(r.maxrss_kb);
    }
    std::printf("median_us %.1f min_us %.1f cpu_us %.1f faults %.0f maxrss_kb %.0f", Median(wall),
                *std::min_element(wall.begin(), wall.end()), Median(cpu), Median(faults),
                Median(rss));
    for (size_t i = 0; cmds[c][i] != nullptr; ++i) std::printf(" %s", cmds[c][i]);
    std::printf("\n");
  }
  posix_spawn_file_actions_destroy(&fa);
  return 0;
}
