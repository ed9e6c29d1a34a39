// Command-line parsing for `unwind` (DESIGN.md "CLI"), kept apart from main()
// so it can be tested.
//
//   absl::StatusOr<Command> cmd = ParseCommandLine({"pid", "1234", "--format=json"});
#ifndef UNWINDD_SERVICE_CLI_ARGS_H_
#define UNWINDD_SERVICE_CLI_ARGS_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "proc/core_paths.h"
#include "unwinder/source_policy.h"

namespace unwindd::service {

// pid, core, demo, minidump, coredump: text or json; perf: perf-script
// (default), json, pprof, folded; profile: pprof (default) or any of
// perf's. core, minidump and coredump also take --format=core-backtrace
// (Command::core_backtrace).
enum class Format { kText, kJson, kPprof, kFolded, kPerfScript };

struct Command {
  enum class Kind {
    kPid, kDemo, kCheckSframe, kCore, kPerf, kProfile, kMinidump, kCoredump, kHelp,
    // --version; health and stats (with --server only: remote/main.cc).
    kVersion, kHealth, kStats
  };
  Kind kind = Kind::kHelp;
  // help: the command whose usage to print ("" for the overview).
  std::string help_topic;
  // perf and profile: --force (-f) writes pprof's binary output to a
  // terminal, which is refused otherwise (as gzip does).
  bool force = false;
  pid_t pid = 0;  // pid; profile's --pid
  std::vector<pid_t> tids;
  Format format = Format::kText;
  bool format_given = false;
  // perf and profile: -o FILE ("" or "-": stdout); perf's filters
  // (--pid=PID, --tid=TID, --comm=NAME, each repeatable); --jobs=N unwinding
  // threads (0: one per CPU).
  std::string output;
  std::vector<pid_t> pids;
  std::vector<std::string> comms;
  int jobs = 0;
  // profile: --duration=SECONDS (0: until SIGINT), --frequency=HZ.
  double duration_s = 0;
  int frequency_hz = 99;
  int max_frames = 0;  // 0: the unwinder's default
  // pid: --stop-timeout=SECONDS, how long to wait for the threads to stop
  // (0: as long as it takes); stop_timeout_given says it was given.
  double stop_timeout_s = 1;
  bool stop_timeout_given = false;
  // --sources=LIST: unwind sources in the order to try them.
  unwinder::SourcePolicy sources;
  bool sources_given = false;
  std::string path;  // check-sframe FILE, perf PERF_DATA ("-": stdin)
  // unwind core CORE: the core, and where its files are on this machine.
  std::string core;
  std::string exe;
  std::string sysroot;
  std::vector<proc::PathMapping> path_maps;
  // Binaries from elsewhere (docs/cores.md "Binaries from elsewhere"):
  // --debug-dir=DIR (repeatable; none given: /usr/lib/debug).
  std::vector<std::string> debug_dirs;
  // --debuginfod=URL (repeatable, or space-separated): these servers;
  // none: $DEBUGINFOD_URLS if set; --no-debuginfod: never.
  std::string debuginfod_urls;
  bool no_debuginfod = false;
  // --debuginfod-timeout=SECONDS, --debuginfod-max-bytes=N: per request.
  int debuginfod_timeout_s = 30;
  uint64_t debuginfod_max_bytes = uint64_t{1} << 30;
  // --symbols: function+offset per frame.
  bool symbols = false;
  // unwind minidump FILE: the minidump (in `core`, like a core, so that
  // --exe, --sysroot and --path-map apply the same way).
  // --minidump=OUT (core, pid, coredump): also write the target as a
  // minidump; --minidump-stack-bytes=N per thread.
  std::string minidump_out;
  // --format=core-backtrace: ABRT/satyr's core_backtrace JSON (`format`
  // is then kJson).
  bool core_backtrace = false;
  uint64_t minidump_stack_bytes = 64 * 1024;
  // unwind coredump [MATCH]: a systemd-coredump journal entry, from
  // --file=JOURNAL (repeatable), --directory=DIR or the system journal.
  std::string match;
  std::vector<std::string> journal_files;
  std::string journal_directory;
};

// `args` excludes argv[0]. InvalidArgument with a one-line message on misuse.
// Every flag that takes a value takes it as --flag=VALUE or --flag VALUE.
absl::StatusOr<Command> ParseCommandLine(absl::Span<const absl::string_view> args);

// The command's name as typed ("pid", "check-sframe", ...).
absl::string_view CommandName(Command::Kind kind);

// `args` with every `--flag VALUE` (and `-o FILE`) of a flag that takes a
// value joined into `--flag=VALUE`; InvalidArgument when the value is
// missing.
absl::StatusOr<std::vector<std::string>> NormalizeArgs(
    absl::Span<const absl::string_view> args);

}  // namespace unwindd::service

#endif  // UNWINDD_SERVICE_CLI_ARGS_H_
