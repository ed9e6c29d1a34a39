#include "service/cli/remote_exec.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace unwindd::service {

bool WantsServer(absl::Span<const absl::string_view> args) {
  for (absl::string_view a : args) {
    if (absl::StartsWith(a, "--server=")) return true;
  }
  return false;
}

absl::StatusOr<std::string> FindRemoteBinary() {
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) return absl::InternalError("cannot read /proc/self/exe");
  std::string exe(self, n);
  std::string dir = exe.substr(0, exe.rfind('/'));
  std::vector<std::string> candidates = {
      dir + "/unwind_remote",
      exe + ".runfiles/unwindd/service/unwind_remote",
  };
  if (const char* runfiles = getenv("RUNFILES_DIR")) {
    candidates.push_back(absl::StrCat(runfiles, "/unwindd/service/unwind_remote"));
  }
  for (const std::string& c : candidates) {
    if (access(c.c_str(), X_OK) == 0) return c;
  }
  return absl::NotFoundError(absl::StrCat(
      "--server needs unwind_remote next to unwind (looked for ", candidates[0],
      "); build it with: bazel build //service:unwind"));
}

int ExecRemote(char** argv) {
  absl::StatusOr<std::string> remote = FindRemoteBinary();
  if (remote.ok()) {
    execv(remote->c_str(), argv);
    remote = absl::InternalError(
        absl::StrCat("cannot run ", *remote, ": ", strerror(errno)));
  }
  std::fprintf(stderr, "unwind: %s\n", std::string(remote.status().message()).c_str());
  return 1;
}

}  // namespace unwindd::service
