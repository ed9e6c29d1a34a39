// Where to find, on this machine, the files a core recorded by their path on
// the machine (or container, or chroot) that crashed: `unwind core`'s --exe,
// --sysroot and --path-map.
//
//   FileLookup lookup{.sysroot = "/srv/sysroots/prod"};
//   CandidatePaths(lookup, "/usr/lib/x86_64-linux-gnu/libc.so.6", false);
//   // {"/srv/sysroots/prod/usr/lib/x86_64-linux-gnu/libc.so.6"}
//
// Candidates are tried in order and each one is checked against the build-id
// the core holds, when it holds one, so a candidate that is another build of
// the file is skipped rather than used.
#ifndef UNWINDD_PROC_CORE_PATHS_H_
#define UNWINDD_PROC_CORE_PATHS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace unwindd::proc {

struct PathMapping {
  std::string from;  // a path prefix as the core recorded it
  std::string to;    // what replaces it here
};

struct FileLookup {
  std::string exe;      // the main executable, whatever its recorded path
  std::string sysroot;  // prefix for every recorded absolute path
  std::vector<PathMapping> path_map;
};

// "OLD=NEW" (the first '=' splits; both sides non-empty). InvalidArgument
// otherwise.
absl::StatusOr<PathMapping> ParsePathMapping(absl::string_view spec);

// In order: --exe (for the main executable only); every --path-map whose
// `from` is `recorded` or a directory prefix of it, in the order given;
// then, with --sysroot, `recorded` under it, its merged-/usr twin (/lib/x
// <-> /usr/lib/x) and, for shared objects, its file name in the usual
// library directories under it; without one, `recorded` itself. With a
// sysroot the host's own files are never used: a core from another machine
// must not silently unwind with this machine's libc. A recorded name that
// is not absolute (a DT_SONAME found without NT_FILE) is looked up in the
// library directories of the sysroot (or of /).
std::vector<std::string> CandidatePaths(const FileLookup& lookup,
                                        absl::string_view recorded,
                                        bool is_main_executable);

// The directories the dynamic linker searches on the distributions we run
// on (Debian multiarch first), for names without a directory.
const std::vector<std::string>& LibraryDirs();

}  // namespace unwindd::proc

#endif  // UNWINDD_PROC_CORE_PATHS_H_
