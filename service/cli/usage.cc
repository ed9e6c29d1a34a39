#include "service/cli/usage.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace unwindd::service {
namespace {

// Flag blocks several commands share.
#define UNWIND_FLAGS                                                              \
  "  --max-frames=N    stop each thread's walk after N frames\n"                  \
  "  --sources=LIST    unwind sources to use, in order, from eh_frame,\n"         \
  "                    debug_frame, sframe, fp (default: all four, that order)\n"

#define BINARIES_FLAGS                                                            \
  "  --debug-dir=DIR   where separate debug files are (repeatable; default\n"     \
  "                    /usr/lib/debug): DIR/.build-id/xx/rest.debug and\n"        \
  "                    DIR/<file's directory>/<.gnu_debuglink name>\n"            \
  "  --debuginfod=URL  fetch missing files and debug info by build-id from\n"     \
  "                    these servers (default: $DEBUGINFOD_URLS)\n"               \
  "  --no-debuginfod   never ask a debuginfod server\n"                          \
  "  --debuginfod-timeout=S, --debuginfod-max-bytes=N\n"                          \
  "                    bounds per request (default 30 s, 1 GiB)\n"                \
  "  --symbols         function+offset per frame (like eu-stack)\n"

#define FILES_FLAGS                                                               \
  "  --exe=PATH        the main executable, whatever path the target recorded\n"  \
  "                    (used only if its build-id matches; a warning says so)\n"  \
  "  --sysroot=DIR     look up every recorded path under DIR\n"                   \
  "  --path-map=OLD=NEW  a recorded path prefix OLD is NEW here (repeatable)\n"   \
  "  --tid=TID         only this thread (repeatable)\n"

#define MINIDUMP_OUT_FLAGS                                                        \
  "  --minidump=OUT    also write the target as a minidump to OUT (its size\n"    \
  "                    against the core's goes to stderr)\n"                      \
  "  --minidump-stack-bytes=N  stack bytes per thread in it (default 65536)\n"

#define SAMPLING_FLAGS                                                            \
  "  -o FILE, --output=FILE  write there (default: stdout; - is stdout)\n"        \
  "  -f, --force       write pprof's gzipped bytes to a terminal anyway\n"        \
  "  --jobs=N          unwinding threads (perf: default 1, the reading thread\n"  \
  "                    itself, the least CPU; profile: default one per CPU)\n"    \
  UNWIND_FLAGS

const CommandUsage kCommands[] = {
    {"pid",
     "usage: unwind pid PID [--tid=TID]... [--format=text|json] [options]\n"
     "  Stops every thread of the live process PID (ptrace), unwinds it and\n"
     "  detaches.\n"
     "  --tid=TID         only this thread (repeatable)\n"
     "  --format=FMT      text (default, like eu-stack) or json\n"
     "  --stop-timeout=S  wait at most S seconds (default 1) for the threads to\n"
     "                    stop; one that has not (uninterruptible sleep, D) is\n"
     "                    walked from the pc and sp the kernel shows for it\n"
     "                    (0: wait as long as it takes, as eu-stack does)\n"
     UNWIND_FLAGS BINARIES_FLAGS MINIDUMP_OUT_FLAGS
     "  Works with --server=ADDRESS (see 'unwind --help'; not --stop-timeout).\n"},
    {"demo",
     "usage: unwind demo [--format=text|json] [options]\n"
     "  Starts a bundled demo process (five threads), unwinds it and ends it.\n"
     "  --format=FMT      text (default) or json\n"
     UNWIND_FLAGS BINARIES_FLAGS
     "  Works with --server=ADDRESS (see 'unwind --help').\n"},
    {"core",
     "usage: unwind core CORE [--exe=PATH] [--sysroot=DIR] [--path-map=OLD=NEW]...\n"
     "                        [--format=text|json|core-backtrace] [options]\n"
     "  Unwinds every thread of an ELF core file (.zst, .xz, .lz4 too), with\n"
     "  the files it recorded found on this machine by path and build-id.\n"
     "  --format=FMT      text (default), json, or core-backtrace (ABRT/satyr's\n"
     "                    core_backtrace JSON with the crash signature)\n"
     FILES_FLAGS UNWIND_FLAGS BINARIES_FLAGS MINIDUMP_OUT_FLAGS
     "  Works with --server=ADDRESS (see 'unwind --help').\n"},
    {"minidump",
     "usage: unwind minidump FILE [--exe=PATH] [--sysroot=DIR] [--path-map=OLD=NEW]...\n"
     "                            [--format=text|json|core-backtrace] [options]\n"
     "  Unwinds a Breakpad/Crashpad minidump with the modules' own CFI, found\n"
     "  by build-id like a core's files.\n"
     "  --format=FMT      text (default), json or core-backtrace\n"
     FILES_FLAGS UNWIND_FLAGS BINARIES_FLAGS
     "  Works with --server=ADDRESS (see 'unwind --help').\n"},
    {"coredump",
     "usage: unwind coredump [MATCH] [--file=JOURNAL]... [--directory=DIR]\n"
     "                       [--format=text|json|core-backtrace] [options]\n"
     "  The newest systemd-coredump entry in the journal whose PID, COMM or EXE\n"
     "  is MATCH (or FIELD=VALUE; none: the newest of all): its metadata and\n"
     "  its core, unwound.\n"
     "  --file=JOURNAL    read this journal file (repeatable)\n"
     "  --directory=DIR   read the journal files in DIR\n"
     "  --format=FMT      text (default), json or core-backtrace\n"
     FILES_FLAGS UNWIND_FLAGS BINARIES_FLAGS MINIDUMP_OUT_FLAGS},
    {"perf",
     "usage: unwind perf PERF_DATA [--format=perf-script|json|pprof|folded] [-o FILE]\n"
     "                             [--pid=PID]... [--tid=TID]... [--comm=NAME]...\n"
     "                             [--sysroot=DIR] [options]\n"
     "  Unwinds every sample of a `perf record --call-graph dwarf` recording\n"
     "  (PERF_DATA - : a pipe-mode recording on stdin, as in\n"
     "  `perf record --call-graph dwarf -o - PROG | unwind perf -`). A\n"
     "  `perf record --call-graph fp` recording gives its recorded call chains.\n"
     "  --format=FMT      perf-script (default, as `perf script` prints), json,\n"
     "                    pprof (gzipped profile.proto) or folded (flame graphs)\n"
     "  --pid=PID, --tid=TID, --comm=NAME  only these samples (repeatable)\n"
     "  --sysroot=DIR     the recorded files under DIR\n"
     SAMPLING_FLAGS},
    {"profile",
     "usage: unwind profile --pid=PID [--duration=S] [--frequency=HZ] [-o FILE]\n"
     "                      [--format=pprof|folded|json|perf-script] [options]\n"
     "  Samples every thread of PID with perf_event_open (cpu-clock, user\n"
     "  registers and stack) and unwinds as it goes, until --duration, SIGINT\n"
     "  or the process's exit.\n"
     "  --pid=PID         the process to sample\n"
     "  --duration=S      stop after S seconds (default: at SIGINT)\n"
     "  --frequency=HZ    samples per second per thread (default 99)\n"
     "  --format=FMT      pprof (default, gzipped: needs -o FILE or --force on a\n"
     "                    terminal), folded, json or perf-script\n"
     SAMPLING_FLAGS},
    {"check-sframe",
     "usage: unwind check-sframe FILE\n"
     "  Compares FILE's .sframe with its .eh_frame wherever both cover a PC:\n"
     "  exit 0 when they agree, 3 when they disagree (the report says where),\n"
     "  1 when the file cannot be checked.\n"},
    {"health",
     "usage: unwind --server=ADDRESS health\n"
     "  Asks unwindd's standard gRPC health service: prints SERVING (exit 0)\n"
     "  or NOT_SERVING / UNKNOWN (exit 1).\n"},
    {"stats",
     "usage: unwind --server=ADDRESS stats [--format=text|json]\n"
     "  Prints unwindd's counters (requests, frames, caches, errors) as the\n"
     "  server keeps them.\n"
     "  --format=FMT      text (default, one `name value` a line) or json\n"},
    {"help",
     "usage: unwind help [COMMAND]\n"
     "  Prints COMMAND's usage (as `unwind COMMAND --help` does), or the\n"
     "  overview of every command.\n"},
};

}  // namespace

const char kUsage[] =
    "usage: unwind [--server=ADDRESS [--tls-ca=PEM ...]] COMMAND [ARGS] [options]\n"
    "commands:\n"
    "  unwind pid PID           a live process\n"
    "  unwind demo              a bundled demo process, started and unwound\n"
    "  unwind core CORE         an ELF core file\n"
    "  unwind minidump FILE     a Breakpad/Crashpad minidump\n"
    "  unwind coredump [MATCH]  a systemd-coredump journal entry\n"
    "  unwind perf PERF_DATA    every sample of a perf record --call-graph dwarf\n"
    "  unwind profile --pid=PID sample and unwind a live process\n"
    "  unwind check-sframe FILE compare a file's .sframe with its .eh_frame\n"
    "  unwind health            (with --server) is the daemon serving?\n"
    "  unwind stats             (with --server) the daemon's counters\n"
    "  unwind help COMMAND      that command's flags (or: unwind COMMAND --help)\n"
    "global flags:\n"
    "  --server=ADDRESS  send pid, demo, core, minidump, health and stats to a\n"
    "                    running unwindd: unix:PATH or tcp:HOST:PORT (same output)\n"
    "  --tls-ca=PEM      with tcp:, verify the server against this CA\n"
    "  --tls-cert=PEM --tls-key=PEM  with tcp:, this client's certificate\n"
    "  --version         print the version and the commit it was built from\n"
    "  -h, --help        this text\n"
    "A flag's value follows it after = or a space: --format=json, --format json.\n";

absl::Span<const CommandUsage> CommandUsages() { return kCommands; }

const CommandUsage* FindCommandUsage(absl::string_view name) {
  for (const CommandUsage& c : kCommands) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

std::string SeeHelp(absl::Span<const absl::string_view> args) {
  for (size_t i = 0; i < args.size(); ++i) {
    absl::string_view a = args[i];
    if (a == "help") break;
    if (FindCommandUsage(a) != nullptr) return absl::StrCat("(see 'unwind ", a, " --help')");
  }
  return "(see 'unwind --help')";
}

}  // namespace unwindd::service
