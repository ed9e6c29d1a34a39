#include "testdata/harness/tools.h"

#include <dirent.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "testdata/harness/subprocess.h"

namespace unwindd::harness {

const char kGdbFramesScript[] = R"(import gdb
for inferior in gdb.inferiors():
    for thread in sorted(inferior.threads(), key=lambda t: t.ptid[1]):
        thread.switch()
        print("UWD-TID %d" % thread.ptid[1])
        frame = gdb.newest_frame()
        while frame is not None:
            if frame.type() not in (gdb.INLINE_FRAME, gdb.TAILCALL_FRAME):
                print("UWD-PC 0x%x" % frame.pc())
            frame = frame.older()
print("UWD-END")
)";

namespace {

std::string ToolFailure(absl::string_view tool, const ToolOutput& out) {
  return absl::StrCat(tool, " exited with ", out.exit_code, "; stderr:\n",
                      out.stderr_text, "\nstdout:\n", out.stdout_text);
}

// gdb takes the rest of a `python` command line verbatim, so the multi-line
// script goes in as one exec() of a Python string literal; that spares a
// temporary file.
std::string GdbPythonCommand(absl::string_view script) {
  std::string literal;
  for (char c : script) {
    if (c == '\\' || c == '"') {
      literal += '\\';
      literal += c;
    } else if (c == '\n') {
      literal += "\\n";
    } else {
      literal += c;
    }
  }
  return absl::StrCat("python exec(\"", literal, "\")");
}

// "<program>_<O0..O3>_<fp|nofp>_<pie|nopie>[_debugframe][_m32]", where the program
// name may itself contain '_' (variants.bzl).
bool IsVariantName(absl::string_view name) {
  std::vector<absl::string_view> parts = absl::StrSplit(name, '_');
  for (size_t i = 1; i + 2 < parts.size(); ++i) {
    const absl::string_view opt = parts[i];
    if (opt.size() != 2 || opt[0] != 'O' || opt[1] < '0' || opt[1] > '3') {
      continue;
    }
    if (parts[i + 1] != "fp" && parts[i + 1] != "nofp") continue;
    if (parts[i + 2] != "pie" && parts[i + 2] != "nopie") continue;
    return std::all_of(parts.begin() + i + 3, parts.end(),
                       [](absl::string_view p) {
                         return p == "debugframe" || p == "m32";
                       });
  }
  return false;
}

}  // namespace

absl::StatusOr<ThreadFrames> EuStackFrames(pid_t pid, SymbolNames* names) {
  absl::StatusOr<ToolOutput> out =
      RunTool({"eu-stack", "-n", "0", "-p", absl::StrCat(pid)}, kToolTimeout);
  if (!out.ok()) return out.status();
  // Exit 1 means "some frames shown, with errors": that is a broken walk we
  // want to see, not a result to compare.
  if (out->exit_code != 0) {
    return absl::InternalError(ToolFailure("eu-stack", *out));
  }
  return ParseEuStackOutput(out->stdout_text, names);
}

absl::StatusOr<ThreadFrames> GdbFrames(pid_t pid) {
  absl::StatusOr<ToolOutput> out =
      RunTool({"gdb", "-nx", "-batch", "-iex", "set debuginfod enabled off",
               "-p", absl::StrCat(pid), "-ex", "set backtrace past-main on",
               "-ex", "set backtrace past-entry on", "-ex",
               GdbPythonCommand(kGdbFramesScript)},
              kToolTimeout);
  if (!out.ok()) return out.status();
  absl::StatusOr<ThreadFrames> frames = ParseGdbOutput(out->stdout_text);
  if (!frames.ok() || out->exit_code != 0) {
    return absl::InternalError(
        absl::StrCat(frames.ok() ? "" : frames.status().message(), "\n",
                     ToolFailure("gdb", *out)));
  }
  return frames;
}

absl::StatusOr<UnwindOutput> UnwindFrames(
    const std::string& unwind_binary, pid_t pid,
    const std::vector<std::string>& extra_args) {
  std::vector<std::string> argv = {unwind_binary, "pid", absl::StrCat(pid),
                                   "--format=json", "--max-frames=4096"};
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  absl::StatusOr<ToolOutput> out = RunTool(argv, kToolTimeout);
  if (!out.ok()) return out.status();
  if (out->exit_code != 0) {
    return absl::InternalError(ToolFailure(unwind_binary, *out));
  }
  absl::StatusOr<UnwindOutput> parsed = ParseUnwindJson(out->stdout_text);
  if (!parsed.ok()) {
    return absl::InternalError(absl::StrCat(parsed.status().message(), "\n",
                                            ToolFailure(unwind_binary, *out)));
  }
  return parsed;
}

bool IsI386Variant(absl::string_view name) {
  return absl::EndsWith(name, "_m32");
}

std::string RunfilesRoot() {
  if (const char* srcdir = std::getenv("TEST_SRCDIR")) {
    return absl::StrCat(srcdir, "/unwindd");
  }
  char exe[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0) return "unwindd";
  return absl::StrCat(absl::string_view(exe, n), ".runfiles/unwindd");
}

std::string FixturePath(const std::string& name) {
  return absl::StrCat(RunfilesRoot(), "/testdata/", name);
}

std::vector<std::string> ListFixtureVariants() {
  std::vector<std::string> names;
  const std::string dir_path = absl::StrCat(RunfilesRoot(), "/testdata");
  DIR* dir = opendir(dir_path.c_str());
  if (dir == nullptr) return names;
  while (struct dirent* entry = readdir(dir)) {
    struct stat st;
    const std::string path = absl::StrCat(dir_path, "/", entry->d_name);
    if (IsVariantName(entry->d_name) && stat(path.c_str(), &st) == 0 &&
        S_ISREG(st.st_mode) && (st.st_mode & S_IXUSR)) {
      names.push_back(entry->d_name);
    }
  }
  closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace unwindd::harness
