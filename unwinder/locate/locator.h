// Where a module's files are: one ordered list of locators for the main
// ELF file and one for its debug information, each result saying where it
// came from and why every other place was not used.
//
//   MainFileQuery q{.recorded_path = "/usr/bin/server", .build_id = "b349...",
//                   .candidates = ClassifyCandidates(target.FileCandidates(m),
//                                                    m.path, lookup)};
//   LocateResult main = LocateMainFile(q, options);
//   if (main.found) {
//     absl::StatusOr<DebugFileQuery> dq =
//         DebugFileQueryFor(*main.found, q.recorded_path, Want::kCfi);
//     LocateResult debug = LocateDebugFile(*dq, options);
//   }
//
// Main file, in order:
//   1. the target's own candidates, unchanged (proc::Target::FileCandidates:
//      the recorded path, /proc/PID/map_files/START-END and
//      /proc/PID/root/PATH for live targets; --exe, --path-map, --sysroot
//      for cores; the opened file for snapshots);
//   2. DIR/.build-id/xx/rest for each debug directory (elfutils'
//      dwfl_build_id_find_elf: the symlink distributions install next to
//      the .debug file);
//   3. debuginfod's executable for the build-id.
// Debug information, in order (gdb's and elfutils' order, see
// "Separate Debug Files" in gdb's manual and libdwfl/find-debuginfo.c):
//   1. DIR/.build-id/xx/rest.debug for each debug directory;
//   2. .gnu_debuglink NAME beside the file: FILE_DIR/NAME, then
//      FILE_DIR/.debug/NAME, then DIR/FILE_DIR/NAME for each debug
//      directory (FILE_DIR absolute);
//   3. MiniDebugInfo: the xz-compressed ELF in the file's .gnu_debugdata;
//   4. debuginfod's debuginfo for the build-id.
// With a sysroot, each debug directory is tried under the sysroot first.
//
// Verification: a main-file candidate must have the build-id the target
// recorded, when it recorded one (a file without a build-id is taken, as
// the unwinder always did); a build-id candidate must have exactly that
// build-id; a debuglink candidate must have the CRC-32 the link records
// and, when both files have one, the same build-id; every debug candidate
// must be an ELF file for the same machine and class, and not the main
// file itself by another name. A rejected candidate is an Attempt with the
// reason, and the search goes on.
//
// Privacy (the rule for debuginfod): a build-id is only sent to a server
// when (a) debuginfod is configured (LocateOptions::debuginfod), (b) the
// caller's own target named it (a core's dumped headers, a snapshot's
// mapping table, a file the caller could open), never a build-id given
// on its own, and (c) no local candidate exists that the caller is not
// allowed to read: a file the caller may not read locally is never fetched
// for it from elsewhere.
#ifndef UNWINDD_UNWINDER_LOCATE_LOCATOR_H_
#define UNWINDD_UNWINDER_LOCATE_LOCATOR_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "unwinder/locate/debuginfod.h"
#include "unwinder/locate/elf_file.h"

namespace unwindd::locate {

// Where a candidate came from.
enum class Origin {
  kRecordedPath,       // the path the target recorded
  kExe,                // --exe (cores: the main executable)
  kPathMap,            // --path-map
  kSysroot,            // --sysroot
  kMapFiles,           // /proc/PID/map_files/START-END
  kProcRoot,           // /proc/PID/root/PATH
  kBuildIdDir,         // DIR/.build-id/xx/rest[.debug]
  kDebugLinkBeside,    // FILE_DIR/NAME
  kDebugLinkDotDebug,  // FILE_DIR/.debug/NAME
  kDebugLinkDebugDir,  // DIR/FILE_DIR/NAME
  kMiniDebugInfo,      // .gnu_debugdata
  kDebuginfod,
};
// "recorded_path", "map_files", "build_id_dir", "debuglink", ...
absl::string_view OriginName(Origin origin);

enum class Kind { kMainFile, kDebugFile, kMiniDebugInfo };
absl::string_view KindName(Kind kind);  // "main", "debug", "minidebuginfo"

struct Candidate {
  std::string path;
  Origin origin = Origin::kRecordedPath;
};

// Labels the paths a proc::Target proposes (Target::FileCandidates) with
// their origin, from their shape: /proc/N/map_files/..., /proc/N/root/...,
// the recorded path itself, under `sysroot`, `exe`, else a path map.
std::vector<Candidate> ClassifyCandidates(const std::vector<std::string>& paths,
                                          absl::string_view recorded_path,
                                          absl::string_view sysroot,
                                          absl::string_view exe);

// One place looked at, and what was wrong with it (OK for the one used).
struct Attempt {
  Origin origin = Origin::kRecordedPath;
  std::string path;  // or, for debuginfod, "debuginfod executable <id>"
  absl::Status status;
  absl::Duration took;
};

struct Located {
  Kind kind = Kind::kMainFile;
  Origin origin = Origin::kRecordedPath;
  std::string path;  // empty for MiniDebugInfo, which has `image`
  std::shared_ptr<const std::vector<uint8_t>> image;
  std::string build_id;  // the file's own, "" if none
  bool fetched = false;     // from debuginfod (its cache or a server)
  bool downloaded = false;  // fetched from a server by this lookup
  // Debug files: the file as opened and verified (a fetched one may be
  // readable only with the process's own identity, see `as_self`).
  std::shared_ptr<ElfFile> elf;
};

struct LocateResult {
  std::optional<Located> found;
  std::vector<Attempt> attempts;  // in order; the last is `found`'s if any
  absl::Duration took;            // the whole lookup

  // One line for humans: "found at X (build_id_dir)" or "not found
  // (map_files /proc/1/map_files/...: NotFound ...; build_id_dir ...)".
  std::string Summary() const;
  // Some attempt failed with PermissionDenied.
  bool permission_denied() const;
  // The first attempt that found the file with another build-id.
  const Attempt* mismatch() const;
};

struct LocateOptions {
  std::string sysroot;
  std::vector<std::string> debug_dirs = {"/usr/lib/debug"};
  // Off when null; not owned.
  const Debuginfod* debuginfod = nullptr;
  uint64_t max_minidebuginfo_bytes = uint64_t{256} << 20;
  uint64_t max_crc_bytes = uint64_t{8} << 30;
  // Reads a main-file candidate's build-id ("" when it has none). The
  // default opens it with ElfFile; the unwinder passes its module cache's
  // opener so that the file is opened once.
  std::function<absl::StatusOr<std::string>(const std::string& path)>
      read_build_id;
  // Runs `fn` with the process's own filesystem identity. debuginfod's
  // cache belongs to the process (unwindd's, 0700), not to the caller whose
  // identity a server request runs with; fetching and opening fetched
  // files go through this. Empty: run `fn` as is (the CLI).
  std::function<void(const std::function<void()>& fn)> as_self;
  // Runs `fn` with the filesystem identity of whoever the lookup is for:
  // the build-id directories, debug directories and .gnu_debuglink
  // candidates are opened through it, so that a server that unwinds as
  // itself (live processes, snapshots) only uses debug files its caller may
  // read. Empty: run `fn` as is.
  std::function<void(const std::function<void()>& fn)> as_caller;
};

struct MainFileQuery {
  std::string recorded_path;
  std::string build_id;  // recorded by the target; "" when unknown
  std::vector<Candidate> candidates;
  // Live targets: only this inode (the one mapped) will do; 0: any.
  uint64_t inode = 0;
};

LocateResult LocateMainFile(const MainFileQuery& query,
                            const LocateOptions& options);

// What a debug-information candidate must bring.
enum class Want {
  kAny,  // any verified debug file (symbols)
  kCfi,  // one with CFI (.debug_frame or .eh_frame contents); others are
         // recorded as attempts and the search goes on
};

struct DebugFileQuery {
  std::string main_path;      // the main file as located
  std::string recorded_path;  // as the target recorded it
  std::string build_id;       // the main file's
  uint16_t machine = 0;
  uint8_t elf_class = 0;
  std::optional<DebugLink> debuglink;
  // The main file's raw .gnu_debugdata (xz); must outlive the lookup.
  absl::Span<const uint8_t> gnu_debugdata;
  Want want = Want::kAny;
  // May ask debuginfod (when configured) for the debuginfo. The unwinder
  // sets it only when the main file's CFI is elsewhere: a debuginfo file is
  // large and its CFI is otherwise not needed.
  bool fetch = false;
};

// The query for `main` (open) whose recorded path is `recorded_path`.
absl::StatusOr<DebugFileQuery> DebugFileQueryFor(const ElfFile& main,
                                                 absl::string_view recorded_path,
                                                 Want want, bool fetch);

LocateResult LocateDebugFile(const DebugFileQuery& query,
                             const LocateOptions& options);

// The debug directories in the order tried (each under the sysroot first).
std::vector<std::string> EffectiveDebugDirs(const LocateOptions& options);

}  // namespace unwindd::locate

#endif  // UNWINDD_UNWINDER_LOCATE_LOCATOR_H_
