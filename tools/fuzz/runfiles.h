// Finds a data file of a fuzz target (a fixture binary, a core) wherever the
// target runs: as a regression test under `bazel test` ($TEST_SRCDIR), as a
// fuzzer started from the workspace by tools/fuzz/run_all.sh (the binary's
// own .runfiles tree), or by hand from the workspace root.
//
//   std::string core = Runfile(argv0, "testdata/core/fixture/core");
#ifndef UNWINDD_TOOLS_FUZZ_RUNFILES_H_
#define UNWINDD_TOOLS_FUZZ_RUNFILES_H_

#include <unistd.h>

#include <cstdlib>
#include <string>

namespace unwindd::fuzz {

// `path` is relative to the workspace root.
inline std::string Runfile(const char* argv0, const std::string& path) {
  for (const char* env : {"TEST_SRCDIR", "RUNFILES_DIR"}) {
    if (const char* dir = std::getenv(env); dir != nullptr && *dir != '\0') {
      const std::string p = std::string(dir) + "/unwindd/" + path;
      if (access(p.c_str(), R_OK) == 0) return p;
    }
  }
  if (argv0 != nullptr) {
    const std::string p = std::string(argv0) + ".runfiles/unwindd/" + path;
    if (access(p.c_str(), R_OK) == 0) return p;
  }
  return path;
}

}  // namespace unwindd::fuzz

#endif  // UNWINDD_TOOLS_FUZZ_RUNFILES_H_
