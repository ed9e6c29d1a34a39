#include "testdata/core/core_tools.h"

#include <dirent.h>
#include <fnmatch.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "testdata/harness/tools.h"

namespace unwindd::harness {
namespace {

std::string ReadSmallFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return std::string(absl::StripTrailingAsciiWhitespace(s.str()));
}

std::string Failure(absl::string_view tool, const ToolOutput& out) {
  return absl::StrCat(tool, " exited with ", out.exit_code, "; stderr:\n",
                      out.stderr_text, "\nstdout:\n", out.stdout_text);
}

// gdb takes the rest of a `python` line verbatim: the script goes in as one
// exec() of a string literal (as tools.cc does for live processes).
std::string PythonCommand(absl::string_view script) {
  std::string lit;
  for (char c : script) {
    if (c == '\\' || c == '"') {
      lit += '\\';
      lit += c;
    } else if (c == '\n') {
      lit += "\\n";
    } else {
      lit += c;
    }
  }
  return absl::StrCat("python exec(\"", lit, "\")");
}

// core(5): expands the specifiers whose values we know; the others become
// '*' for fnmatch.
std::string ExpandPattern(absl::string_view pattern, pid_t pid, int sig,
                          const std::string& comm) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%' || i + 1 == pattern.size()) {
      out += pattern[i];
      continue;
    }
    switch (pattern[++i]) {
      case '%':
        out += '%';
        break;
      case 'p':
      case 'P':
        absl::StrAppend(&out, pid);
        break;
      case 's':
        absl::StrAppend(&out, sig);
        break;
      case 'u':
        absl::StrAppend(&out, getuid());
        break;
      case 'g':
        absl::StrAppend(&out, getgid());
        break;
      case 'e':
        out += comm;
        break;
      default:
        out += '*';
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<std::string> Gcore(pid_t pid, const std::string& prefix) {
  // What the gcore script runs, minus the separate debug info it would
  // read for nothing (the dump needs none): half the time.
  const std::string path = absl::StrCat(prefix, ".", pid);
  absl::StatusOr<ToolOutput> out =
      RunTool({"gdb", "-nx", "-batch", "-iex", "set debuginfod enabled off",
               "-iex", "set debug-file-directory /nonexistent", "-p",
               absl::StrCat(pid), "-ex", absl::StrCat("gcore ", path)},
              kToolTimeout);
  if (!out.ok()) return out.status();
  struct stat st;
  if (out->exit_code != 0 || stat(path.c_str(), &st) != 0) {
    return absl::InternalError(Failure("gcore", *out));
  }
  return path;
}

absl::StatusOr<std::string> CrashAndFindKernelCore(
    const RunningProgram& program, int sig, const std::string& cwd) {
  const std::string pattern = ReadSmallFile("/proc/sys/kernel/core_pattern");
  const bool uses_pid = ReadSmallFile("/proc/sys/kernel/core_uses_pid") == "1";
  if (pattern.empty() || pattern[0] == '|') {
    return absl::FailedPreconditionError(
        absl::StrCat("kernel.core_pattern is '", pattern,
                     "': cores go to a program, not a file; the kernel-core "
                     "case is skipped"));
  }
  const pid_t pid = program.pid();
  const std::string comm = ReadSmallFile(absl::StrCat("/proc/", pid, "/comm"));
  std::string expanded = ExpandPattern(pattern, pid, sig, comm);
  if (uses_pid && !absl::StrContains(pattern, "%p"))
    absl::StrAppend(&expanded, ".", pid);
  if (expanded[0] != '/') expanded = absl::StrCat(cwd, "/", expanded);
  const size_t slash = expanded.rfind('/');
  const std::string dir = expanded.substr(0, slash);
  const std::string glob = expanded.substr(slash + 1);
  if (absl::StrContains(dir, "*")) {
    return absl::FailedPreconditionError(
        absl::StrCat("kernel.core_pattern '", pattern,
                     "' puts cores in a directory this "
                     "test cannot name; the kernel-core case is skipped"));
  }

  if (kill(pid, sig) != 0) return absl::InternalError(strerror(errno));
  // WNOWAIT: see the exit (the dump is complete by then) without reaping,
  // which RunningProgram does.
  siginfo_t info = {};
  const absl::Time deadline = absl::Now() + kToolTimeout;
  while (true) {
    info.si_pid = 0;
    if (waitid(P_PID, pid, &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
      return absl::InternalError(absl::StrCat("waitid: ", strerror(errno)));
    }
    if (info.si_pid == pid) break;
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError("the crashed program did not exit");
    }
    absl::SleepFor(absl::Milliseconds(5));
  }
  if (info.si_code != CLD_DUMPED) {
    return absl::FailedPreconditionError(
        absl::StrCat("the kernel did not dump a core (si_code ", info.si_code,
                     "; RLIMIT_CORE or kernel.core_pattern '", pattern,
                     "'); the kernel-core case is skipped"));
  }
  DIR* d = opendir(dir.c_str());
  if (d == nullptr)
    return absl::NotFoundError(absl::StrCat("no directory ", dir));
  std::string found;
  while (struct dirent* e = readdir(d)) {
    if (fnmatch(glob.c_str(), e->d_name, 0) == 0) {
      found = absl::StrCat(dir, "/", e->d_name);
      break;
    }
  }
  closedir(d);
  if (found.empty()) {
    return absl::NotFoundError(absl::StrCat("no core matching ", expanded,
                                            " (core_pattern '", pattern, "')"));
  }
  return found;
}

absl::StatusOr<ThreadFrames> EuStackCoreFrames(const std::string& core,
                                               const std::string& exe,
                                               SymbolNames* names) {
  absl::StatusOr<ToolOutput> out =
      RunTool({"eu-stack", "-n", "0", absl::StrCat("--core=", core),
               absl::StrCat("--executable=", exe)},
              kToolTimeout);
  if (!out.ok()) return out.status();
  if (out->exit_code != 0)
    return absl::InternalError(Failure("eu-stack", *out));
  return ParseEuStackOutput(out->stdout_text, names);
}

absl::StatusOr<std::vector<ThreadFrames>> GdbCoreFrames(
    const std::string& exe, const std::vector<std::string>& cores,
    const std::vector<std::string>& settings) {
  std::vector<std::string> argv = {"gdb",
                                   "-nx",
                                   "-batch",
                                   "-iex",
                                   "set debuginfod enabled off",
                                   "-ex",
                                   "set backtrace past-main on",
                                   "-ex",
                                   "set backtrace past-entry on"};
  for (const std::string& s : settings) argv.insert(argv.end(), {"-ex", s});
  argv.insert(argv.end(), {"-ex", absl::StrCat("file ", exe)});
  for (const std::string& c : cores) {
    argv.insert(argv.end(), {"-ex", absl::StrCat("core-file ", c), "-ex",
                             PythonCommand(kGdbFramesScript)});
  }
  absl::StatusOr<ToolOutput> out = RunTool(argv, kToolTimeout);
  if (!out.ok()) return out.status();
  // One UWD-END per core: parse each section on its own.
  std::vector<ThreadFrames> result;
  std::vector<std::string> sections =
      absl::StrSplit(out->stdout_text, "UWD-END\n", absl::SkipEmpty());
  for (size_t i = 0; i < cores.size(); ++i) {
    if (i >= sections.size()) {
      return absl::InternalError(absl::StrCat("gdb printed frames of ", i,
                                              " of ", cores.size(), " cores\n",
                                              Failure("gdb", *out)));
    }
    absl::StatusOr<ThreadFrames> f = ParseGdbOutput(sections[i] + "UWD-END\n");
    if (!f.ok()) {
      return absl::InternalError(
          absl::StrCat(f.status().message(), "\n", Failure("gdb", *out)));
    }
    result.push_back(*std::move(f));
  }
  return result;
}

absl::StatusOr<UnwindCoreResult> UnwindCoreFrames(
    const std::string& unwind, const std::string& core,
    const std::vector<std::string>& args) {
  std::vector<std::string> argv = {unwind, "core", core};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.insert(argv.end(), {"--format=json", "--max-frames=4096"});
  absl::StatusOr<ToolOutput> out = RunTool(argv, kToolTimeout);
  if (!out.ok()) return out.status();
  if (out->exit_code != 0) return absl::InternalError(Failure("unwind", *out));
  absl::StatusOr<UnwindOutput> parsed = ParseUnwindJson(out->stdout_text);
  if (!parsed.ok()) {
    return absl::InternalError(
        absl::StrCat(parsed.status().message(), "\n", Failure("unwind", *out)));
  }
  return UnwindCoreResult{*std::move(parsed), out->stdout_text,
                          out->stderr_text};
}

}  // namespace unwindd::harness
