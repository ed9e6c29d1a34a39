#include "testdata/harness/subprocess.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

extern char** environ;

namespace unwindd::harness {
namespace {

struct Spawned {
  pid_t pid = -1;
  int stdout_fd = -1;
  int stderr_fd = -1;  // -1: stderr is inherited.
};

void CloseIfOpen(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

void KillAndReap(pid_t pid) {
  kill(pid, SIGKILL);
  while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
}

absl::Status ErrnoError(absl::string_view what) {
  return absl::InternalError(absl::StrCat(what, ": ", strerror(errno)));
}

// fork + execvpe. Everything the child needs is prepared before fork(), so
// the child only makes async-signal-safe calls. An exec failure travels back
// through a close-on-exec pipe, so "no such tool" is an error here and not an
// exit code 127 to decode later.
absl::StatusOr<Spawned> Spawn(const std::vector<std::string>& argv,
                              bool capture_stderr) {
  if (argv.empty()) return absl::InvalidArgumentError("empty argv");
  std::vector<char*> args;
  for (const std::string& a : argv) {
    args.push_back(const_cast<char*>(a.c_str()));
  }
  args.push_back(nullptr);
  std::vector<char*> env;
  for (char** e = environ; *e != nullptr; ++e) {
    if (!absl::StartsWith(*e, "DEBUGINFOD_URLS=")) env.push_back(*e);
  }
  env.push_back(nullptr);

  int out[2], err[2] = {-1, -1}, exec_err[2];
  const int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (devnull < 0) return ErrnoError("open /dev/null");
  if (pipe2(out, O_CLOEXEC) != 0 ||
      (capture_stderr && pipe2(err, O_CLOEXEC) != 0) ||
      pipe2(exec_err, O_CLOEXEC) != 0) {
    return ErrnoError("pipe2");
  }
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) return ErrnoError("fork");
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);  // The parent died before prctl.
    dup2(devnull, 0);
    dup2(out[1], 1);
    if (capture_stderr) dup2(err[1], 2);
    // A path is run as it is: execvpe would hand a file the kernel cannot
    // execute (ENOEXEC: an i386 program on a kernel without IA-32
    // emulation) to /bin/sh as a script.
    if (strchr(args[0], '/') != nullptr) {
      execve(args[0], args.data(), env.data());
    } else {
      execvpe(args[0], args.data(), env.data());
    }
    const int e = errno;
    (void)!write(exec_err[1], &e, sizeof(e));
    _exit(127);
  }
  close(devnull);
  close(out[1]);
  if (capture_stderr) close(err[1]);
  close(exec_err[1]);
  int child_errno = 0;
  ssize_t n;
  while ((n = read(exec_err[0], &child_errno, sizeof(child_errno))) < 0 &&
         errno == EINTR) {
  }
  close(exec_err[0]);
  if (n > 0) {
    waitpid(pid, nullptr, 0);
    close(out[0]);
    if (capture_stderr) close(err[0]);
    if (child_errno == ENOEXEC) {
      return absl::UnimplementedError(absl::StrCat(
          "this kernel cannot execute ", argv[0], ": ", strerror(child_errno),
          " (an i386 program where IA-32 emulation is off or missing)"));
    }
    return absl::NotFoundError(
        absl::StrCat("cannot run ", argv[0], ": ", strerror(child_errno)));
  }
  return Spawned{pid, out[0], capture_stderr ? err[0] : -1};
}

int PollTimeoutMs(absl::Time deadline) {
  const absl::Duration left = deadline - absl::Now();
  if (left <= absl::ZeroDuration()) return 0;
  return static_cast<int>(absl::ToInt64Milliseconds(left)) + 1;
}

int DecodeWaitStatus(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

// Returns tid -> contents of /proc/PID/task/TID/syscall, and whether every
// thread is blocked in a system call ("running" and "-1 ..." mean it is not).
absl::StatusOr<std::pair<std::map<std::string, std::string>, bool>>
ReadSyscalls(pid_t pid) {
  const std::string task_dir = absl::StrCat("/proc/", pid, "/task");
  DIR* dir = opendir(task_dir.c_str());
  if (dir == nullptr) return ErrnoError(absl::StrCat("opendir ", task_dir));
  std::map<std::string, std::string> syscalls;
  bool all_blocked = true;
  while (struct dirent* entry = readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    std::ifstream file(absl::StrCat(task_dir, "/", entry->d_name, "/syscall"));
    std::stringstream contents;
    contents << file.rdbuf();
    std::string text = contents.str();
    int nr = -1;
    if (!file || !absl::SimpleAtoi(text.substr(0, text.find(' ')), &nr) ||
        nr < 0) {
      all_blocked = false;  // Running, gone, or not in a syscall.
    }
    syscalls[entry->d_name] = std::move(text);
  }
  closedir(dir);
  return std::make_pair(std::move(syscalls), all_blocked);
}

}  // namespace

RunningProgram::RunningProgram(RunningProgram&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      stdout_fd_(std::exchange(other.stdout_fd_, -1)) {}

RunningProgram& RunningProgram::operator=(RunningProgram&& other) noexcept {
  if (this != &other) {
    Kill();
    pid_ = std::exchange(other.pid_, -1);
    stdout_fd_ = std::exchange(other.stdout_fd_, -1);
  }
  return *this;
}

void RunningProgram::Kill() {
  if (pid_ > 0) KillAndReap(pid_);
  pid_ = -1;
  CloseIfOpen(stdout_fd_);
}

absl::Status WaitUntilSettled(pid_t pid, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  std::string last;
  for (;;) {
    int status;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      return absl::FailedPreconditionError(absl::StrCat(
          "program ", pid, " exited with ", DecodeWaitStatus(status)));
    }
    auto first = ReadSyscalls(pid);
    if (!first.ok()) return first.status();
    absl::SleepFor(absl::Milliseconds(20));
    auto second = ReadSyscalls(pid);
    if (!second.ok()) return second.status();
    if (first->second && second->second && first->first == second->first) {
      return absl::OkStatus();
    }
    if (absl::Now() > deadline) {
      std::string threads;
      for (const auto& [tid, text] : second->first) {
        absl::StrAppend(&threads, "\n  ", tid, ": ",
                        absl::StripTrailingAsciiWhitespace(text));
      }
      return absl::DeadlineExceededError(absl::StrCat(
          "threads of ", pid, " did not settle in syscalls:", threads));
    }
  }
}

absl::StatusOr<RunningProgram> StartProgram(const std::string& path,
                                            absl::Duration ready_timeout) {
  return StartProgram(path, ready_timeout, Settle::kWait);
}

absl::StatusOr<RunningProgram> StartProgram(const std::string& path,
                                            absl::Duration ready_timeout, Settle settle) {
  absl::StatusOr<Spawned> spawned = Spawn({path}, /*capture_stderr=*/false);
  if (!spawned.ok()) return spawned.status();
  // From here on the RAII object owns the child, on every return path.
  RunningProgram program(spawned->pid, spawned->stdout_fd);
  const absl::Time deadline = absl::Now() + ready_timeout;
  std::string line;
  while (!absl::StrContains(line, '\n')) {
    pollfd pfd = {spawned->stdout_fd, POLLIN, 0};
    const int r = poll(&pfd, 1, PollTimeoutMs(deadline));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return ErrnoError("poll");
    if (r == 0) {
      return absl::DeadlineExceededError(absl::StrCat(
          path, ": no ready line within ", absl::FormatDuration(ready_timeout),
          " (got \"", line, "\")"));
    }
    char buf[256];
    const ssize_t n = read(spawned->stdout_fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          path, " closed stdout before its ready line (got \"", line, "\")"));
    }
    line.append(buf, n);
  }
  if (line != "ready\n") {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": expected \"ready\\n\", got \"", line, "\""));
  }
  if (settle == Settle::kNo) return program;
  absl::Status settled = WaitUntilSettled(
      spawned->pid, std::max(deadline - absl::Now(), absl::Seconds(1)));
  if (!settled.ok()) return settled;
  return program;
}

absl::StatusOr<ToolOutput> RunTool(const std::vector<std::string>& argv,
                                   absl::Duration timeout) {
  absl::StatusOr<Spawned> spawned = Spawn(argv, /*capture_stderr=*/true);
  if (!spawned.ok()) return spawned.status();
  const absl::Time deadline = absl::Now() + timeout;
  ToolOutput output;
  int fds[2] = {spawned->stdout_fd, spawned->stderr_fd};
  std::string* sinks[2] = {&output.stdout_text, &output.stderr_text};
  bool timed_out = false;
  while ((fds[0] >= 0 || fds[1] >= 0) && !timed_out) {
    pollfd pfds[2] = {{fds[0], POLLIN, 0}, {fds[1], POLLIN, 0}};
    const int r = poll(pfds, 2, PollTimeoutMs(deadline));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      timed_out = true;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i] < 0 || pfds[i].revents == 0) continue;
      char buf[65536];
      const ssize_t n = read(fds[i], buf, sizeof(buf));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        CloseIfOpen(fds[i]);
      } else {
        sinks[i]->append(buf, n);
      }
    }
  }
  CloseIfOpen(fds[0]);
  CloseIfOpen(fds[1]);
  // Both pipes are closed, but the tool may still be detaching; bound that
  // wait by the same deadline.
  int status = 0;
  while (!timed_out) {
    const pid_t r = waitpid(spawned->pid, &status, WNOHANG);
    if (r == spawned->pid) {
      output.exit_code = DecodeWaitStatus(status);
      return output;
    }
    if (r < 0 && errno != EINTR) return ErrnoError("waitpid");
    if (absl::Now() > deadline) timed_out = true;
    absl::SleepFor(absl::Milliseconds(2));
  }
  KillAndReap(spawned->pid);
  return absl::DeadlineExceededError(absl::StrCat(
      argv[0], " did not finish within ", absl::FormatDuration(timeout),
      "; stderr so far: ", output.stderr_text));
}

}  // namespace unwindd::harness
