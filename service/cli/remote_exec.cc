#include "service/cli/remote_exec.h"

#include <sys/auxv.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "service/cli/args.h"

namespace unwindd::service {

bool WantsServer(absl::Span<const absl::string_view> args) {
  for (absl::string_view a : args) {
    if (absl::StartsWith(a, "--server=")) return true;
  }
  return false;
}

namespace {

// `name` (a sibling binary of //service:unwind) next to this executable, or
// in its runfiles.
absl::StatusOr<std::string> FindSibling(absl::string_view name, absl::string_view why) {
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) return absl::InternalError("cannot read /proc/self/exe");
  std::string exe(self, n);
  std::string dir = exe.substr(0, exe.rfind('/'));
  std::vector<std::string> candidates = {
      absl::StrCat(dir, "/", name),
      absl::StrCat(exe, ".runfiles/unwindd/service/", name),
  };
  if (const char* runfiles = getenv("RUNFILES_DIR")) {
    candidates.push_back(absl::StrCat(runfiles, "/unwindd/service/", name));
  }
  for (const std::string& c : candidates) {
    if (access(c.c_str(), X_OK) == 0) return c;
  }
  // The Debian package installs the programs side by side (/usr/bin);
  // `bazel build //service:unwind` builds them all into bazel-bin/service/.
  return absl::NotFoundError(absl::StrCat(
      why, " needs ", name, " in the same directory as this unwind, at ", candidates[0],
      " (the package installs them side by side; copy it there, or build both with "
      "bazel build //service:unwind)"));
}

int ExecSibling(absl::StatusOr<std::string> path, char** argv) {
  if (path.ok()) {
    execv(path->c_str(), argv);
    path = absl::InternalError(absl::StrCat("cannot run ", *path, ": ", strerror(errno)));
  }
  std::fprintf(stderr, "unwind: %s\n", std::string(path.status().message()).c_str());
  return 1;
}

}  // namespace

absl::StatusOr<std::string> FindRemoteBinary() {
  return FindSibling("unwind_remote", "--server");
}

int ExecRemote(char** argv) { return ExecSibling(FindRemoteBinary(), argv); }

std::optional<SocketClientCall> ForSocketClient(absl::Span<const absl::string_view> args) {
  std::vector<absl::string_view> rest;
  std::optional<std::string> path;  // of the last --server, if unix:PATH
  for (absl::string_view a : args) {
    if (absl::ConsumePrefix(&a, "--server=")) {
      // gRPC's unix:PATH, relative or absolute; unix://... is gRPC's URI
      // form, left to gRPC.
      path.reset();
      if (absl::ConsumePrefix(&a, "unix:") && !a.empty() && !absl::StartsWith(a, "//")) {
        path = std::string(a);
      }
    } else if (absl::StartsWith(a, "--tls-")) {
      return std::nullopt;
    } else {
      rest.push_back(a);
    }
  }
  if (!path) return std::nullopt;
  absl::StatusOr<Command> cmd = ParseCommandLine(rest);
  if (!cmd.ok() || cmd->kind != Command::Kind::kPid || cmd->core_backtrace ||
      !cmd->minidump_out.empty() || cmd->stop_timeout_given) {
    return std::nullopt;
  }
  return SocketClientCall{*std::move(path), *std::move(cmd)};
}

bool NeedsDebuginfodTwin(absl::string_view debuginfod_urls) {
#ifdef UNWINDD_NO_DEBUGINFOD
  // A build without the client (the static aarch64 cross build, where the
  // twin is static too): --debuginfod is an Unimplemented error there.
  return false;
#endif
  // AT_BASE is where the program interpreter was loaded: 0 when there is
  // none, i.e. in a static executable.
  if (getauxval(AT_BASE) != 0) return false;
  const char* env = getenv("DEBUGINFOD_URLS");
  if (absl::StripAsciiWhitespace(debuginfod_urls).empty() &&
      (env == nullptr || absl::StripAsciiWhitespace(env).empty())) {
    return false;
  }
  // Never the twin itself (were it static by mistake, no exec loop).
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  return n <= 0 || !absl::EndsWith(absl::string_view(self, n), "/unwind_debuginfod");
}

int ExecDebuginfodTwin(char** argv) {
  return ExecSibling(FindSibling("unwind_debuginfod", "debuginfod"), argv);
}

int ExecCoredumpTwin(char** argv) {
  return ExecSibling(FindSibling("unwind_coredump", "coredump"), argv);
}

}  // namespace unwindd::service
