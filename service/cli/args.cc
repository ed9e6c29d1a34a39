#include "service/cli/args.h"

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "unwinder/unwinder.h"

namespace unwindd::service {

const char kUsage[] =
    "usage: unwind pid PID [--tid=TID]... [--format=text|json] [--max-frames=N]\n"
    "                      [--sources=LIST] [--minidump=OUT]\n"
    "       unwind demo [--format=text|json] [--max-frames=N] [--sources=LIST]\n"
    "       unwind core CORE [--exe=PATH] [--sysroot=DIR] [--path-map=OLD=NEW]...\n"
    "                        [--tid=TID]... [--format=text|json|core-backtrace]\n"
    "                        [--max-frames=N] [--sources=LIST] [--minidump=OUT]\n"
    "       unwind minidump FILE [--exe=PATH] [--sysroot=DIR] [--path-map=OLD=NEW]...\n"
    "                        [--tid=TID]... [--format=text|json|core-backtrace]\n"
    "                        [--max-frames=N] [--sources=LIST]\n"
    "       unwind coredump [MATCH] [--file=JOURNAL]... [--directory=DIR]\n"
    "                       [--exe=PATH] [--sysroot=DIR] [--path-map=OLD=NEW]...\n"
    "                       [--format=text|json|core-backtrace] [--minidump=OUT]\n"
    "       unwind check-sframe FILE\n"
    "       unwind perf PERF_DATA [--format=perf-script|json|pprof|folded] [-o FILE]\n"
    "                             [--pid=PID]... [--tid=TID]... [--comm=NAME]...\n"
    "                             [--sources=LIST] [--max-frames=N] [--jobs=N]\n"
    "                             [--sysroot=DIR]\n"
    "       unwind profile --pid=PID [--duration=S] [--frequency=HZ] [-o FILE]\n"
    "                      [--format=pprof|folded|json|perf-script] [--sources=LIST]\n"
    "  perf: every sample of a `perf record --call-graph dwarf` recording (\"-\":\n"
    "        a pipe-mode recording on stdin), unwound here\n"
    "  profile: samples PID with perf_event_open (cpu-clock, user registers and\n"
    "        stack) and unwinds as it goes, until --duration or SIGINT\n"
    "  --sources=LIST  unwind sources to use, in order, from eh_frame,\n"
    "                  debug_frame, sframe, fp (default: all four, in that order)\n"
    "  pid, demo, core, minidump and coredump also take:\n"
    "  --debug-dir=DIR  where separate debug files are (repeatable; default\n"
    "                   /usr/lib/debug): DIR/.build-id/xx/rest.debug and\n"
    "                   DIR/<file's directory>/<.gnu_debuglink name>\n"
    "  --debuginfod=URL  fetch missing files and debug info by build-id from\n"
    "                   these servers (default: $DEBUGINFOD_URLS);\n"
    "                   --no-debuginfod: never\n"
    "  --debuginfod-timeout=S, --debuginfod-max-bytes=N  bounds per request\n"
    "                   (default 30 s, 1 GiB)\n"
    "  --symbols        function+offset per frame (like eu-stack)\n"
    "  minidump: a Breakpad/Crashpad minidump, unwound with the modules' own\n"
    "        CFI, found by build-id like a core's files\n"
    "  coredump: the newest systemd-coredump entry in the journal (the system's,\n"
    "        --file's or --directory's) whose PID, COMM or EXE is MATCH (or\n"
    "        FIELD=VALUE; none: the newest of all), its metadata and its core\n"
    "  core, minidump and coredump also take:\n"
    "  --format=core-backtrace  ABRT/satyr core_backtrace JSON with the crash\n"
    "                   signature (satyr's duphash)\n"
    "  core, pid and coredump also take:\n"
    "  --minidump=OUT   also write the target as a minidump to OUT (its size\n"
    "                   against the core's goes to stderr)\n"
    "  --minidump-stack-bytes=N  stack bytes per thread in it (default 65536)\n";

namespace {

absl::Status Bad(absl::string_view msg) {
  return absl::InvalidArgumentError(msg);
}

absl::StatusOr<int64_t> PositiveNumber(absl::string_view what, absl::string_view v,
                                       int64_t max) {
  int64_t n = 0;
  if (!absl::SimpleAtoi(v, &n) || n <= 0 || n > max) {
    return Bad(absl::StrCat("invalid ", what, " '", v, "'"));
  }
  return n;
}

}  // namespace

absl::StatusOr<Command> ParseCommandLine(absl::Span<const absl::string_view> args) {
  Command cmd;
  std::vector<absl::string_view> positional;
  for (size_t i = 0; i < args.size(); ++i) {
    absl::string_view a = args[i];
    if (a == "-h" || a == "--help") {
      cmd.kind = Command::Kind::kHelp;
      return cmd;
    }
    if (absl::ConsumePrefix(&a, "--tid=")) {
      absl::StatusOr<int64_t> t = PositiveNumber("thread id", a, INT32_MAX);
      if (!t.ok()) return t.status();
      cmd.tids.push_back(static_cast<pid_t>(*t));
    } else if (absl::ConsumePrefix(&a, "--format=")) {
      cmd.core_backtrace = false;
      if (a == "text") {
        cmd.format = Format::kText;
      } else if (a == "json") {
        cmd.format = Format::kJson;
      } else if (a == "pprof") {
        cmd.format = Format::kPprof;
      } else if (a == "folded") {
        cmd.format = Format::kFolded;
      } else if (a == "perf-script") {
        cmd.format = Format::kPerfScript;
      } else if (a == "core-backtrace") {
        cmd.format = Format::kJson;
        cmd.core_backtrace = true;
      } else {
        return Bad(absl::StrCat("unknown format '", a,
                                "' (text, json, pprof, folded, perf-script, "
                                "core-backtrace)"));
      }
      cmd.format_given = true;
    } else if (a == "-o") {
      if (i + 1 >= args.size()) return Bad("-o needs a FILE");
      cmd.output = std::string(args[++i]);
    } else if (absl::ConsumePrefix(&a, "--output=") || absl::ConsumePrefix(&a, "-o=")) {
      cmd.output = std::string(a);
    } else if (absl::ConsumePrefix(&a, "--pid=")) {
      absl::StatusOr<int64_t> p = PositiveNumber("pid", a, INT32_MAX);
      if (!p.ok()) return p.status();
      cmd.pids.push_back(static_cast<pid_t>(*p));
    } else if (absl::ConsumePrefix(&a, "--comm=")) {
      cmd.comms.push_back(std::string(a));
    } else if (absl::ConsumePrefix(&a, "--jobs=")) {
      absl::StatusOr<int64_t> n = PositiveNumber("job count", a, 64);
      if (!n.ok()) return n.status();
      cmd.jobs = static_cast<int>(*n);
    } else if (absl::ConsumePrefix(&a, "--duration=")) {
      double d = 0;
      if (!absl::SimpleAtod(a, &d) || !(d > 0) || d > 86400 * 7) {
        return Bad(absl::StrCat("invalid duration '", a, "'"));
      }
      cmd.duration_s = d;
    } else if (absl::ConsumePrefix(&a, "--frequency=")) {
      absl::StatusOr<int64_t> n = PositiveNumber("frequency", a, 100000);
      if (!n.ok()) return n.status();
      cmd.frequency_hz = static_cast<int>(*n);
    } else if (absl::ConsumePrefix(&a, "--max-frames=")) {
      absl::StatusOr<int64_t> n =
          PositiveNumber("frame limit", a, unwinder::kMaxMaxFrames);
      if (!n.ok()) return n.status();
      cmd.max_frames = static_cast<int>(*n);
    } else if (absl::ConsumePrefix(&a, "--sources=")) {
      absl::StatusOr<unwinder::SourcePolicy> p = unwinder::SourcePolicy::Parse(a);
      if (!p.ok()) return p.status();
      cmd.sources = *p;
      cmd.sources_given = true;
    } else if (absl::ConsumePrefix(&a, "--exe=")) {
      cmd.exe = std::string(a);
    } else if (absl::ConsumePrefix(&a, "--sysroot=")) {
      cmd.sysroot = std::string(a);
    } else if (absl::ConsumePrefix(&a, "--path-map=")) {
      absl::StatusOr<proc::PathMapping> m = proc::ParsePathMapping(a);
      if (!m.ok()) return m.status();
      cmd.path_maps.push_back(*std::move(m));
    } else if (absl::ConsumePrefix(&a, "--debug-dir=")) {
      if (a.empty()) return Bad("empty --debug-dir");
      cmd.debug_dirs.push_back(std::string(a));
    } else if (absl::ConsumePrefix(&a, "--debuginfod=")) {
      if (a.empty()) return Bad("empty --debuginfod URL");
      if (!cmd.debuginfod_urls.empty()) cmd.debuginfod_urls += " ";
      absl::StrAppend(&cmd.debuginfod_urls, a);
    } else if (a == "--no-debuginfod") {
      cmd.no_debuginfod = true;
    } else if (absl::ConsumePrefix(&a, "--debuginfod-timeout=")) {
      absl::StatusOr<int64_t> n = PositiveNumber("debuginfod timeout", a, 3600);
      if (!n.ok()) return n.status();
      cmd.debuginfod_timeout_s = static_cast<int>(*n);
    } else if (absl::ConsumePrefix(&a, "--debuginfod-max-bytes=")) {
      absl::StatusOr<int64_t> n =
          PositiveNumber("debuginfod size limit", a, int64_t{1} << 40);
      if (!n.ok()) return n.status();
      cmd.debuginfod_max_bytes = static_cast<uint64_t>(*n);
    } else if (a == "--symbols") {
      cmd.symbols = true;
    } else if (absl::ConsumePrefix(&a, "--minidump-stack-bytes=")) {
      absl::StatusOr<int64_t> n = PositiveNumber("stack size", a, int64_t{64} << 20);
      if (!n.ok()) return n.status();
      cmd.minidump_stack_bytes = static_cast<uint64_t>(*n);
    } else if (absl::ConsumePrefix(&a, "--minidump=")) {
      if (a.empty()) return Bad("empty --minidump file");
      cmd.minidump_out = std::string(a);
    } else if (absl::ConsumePrefix(&a, "--file=")) {
      if (a.empty()) return Bad("empty --file");
      cmd.journal_files.push_back(std::string(a));
    } else if (absl::ConsumePrefix(&a, "--directory=")) {
      if (a.empty()) return Bad("empty --directory");
      cmd.journal_directory = std::string(a);
    } else if (absl::StartsWith(a, "-")) {
      return Bad(absl::StrCat("unknown option '", a, "'"));
    } else {
      positional.push_back(a);
    }
  }
  if (positional.empty()) {
    return Bad("missing command (pid, core, minidump, coredump, demo, perf, profile or "
               "check-sframe)");
  }
  if (positional[0] == "pid") {
    if (positional.size() != 2) return Bad("pid takes exactly one PID");
    absl::StatusOr<int64_t> p = PositiveNumber("pid", positional[1], INT32_MAX);
    if (!p.ok()) return p.status();
    cmd.kind = Command::Kind::kPid;
    cmd.pid = static_cast<pid_t>(*p);
  } else if (positional[0] == "demo") {
    if (positional.size() != 1) return Bad("demo takes no arguments");
    if (!cmd.tids.empty()) return Bad("--tid does not apply to demo");
    cmd.kind = Command::Kind::kDemo;
  } else if (positional[0] == "core") {
    if (positional.size() != 2) return Bad("core takes exactly one CORE file");
    cmd.kind = Command::Kind::kCore;
    cmd.core = std::string(positional[1]);
  } else if (positional[0] == "minidump") {
    if (positional.size() != 2) return Bad("minidump takes exactly one FILE");
    cmd.kind = Command::Kind::kMinidump;
    cmd.core = std::string(positional[1]);
  } else if (positional[0] == "coredump") {
    if (positional.size() > 2) return Bad("coredump takes at most one MATCH");
    cmd.kind = Command::Kind::kCoredump;
    if (positional.size() == 2) cmd.match = std::string(positional[1]);
  } else if (positional[0] == "perf") {
    if (positional.size() != 2) return Bad("perf takes exactly one PERF_DATA file (or -)");
    cmd.kind = Command::Kind::kPerf;
    cmd.path = std::string(positional[1]);
    if (!cmd.format_given) cmd.format = Format::kPerfScript;
  } else if (positional[0] == "profile") {
    if (positional.size() != 1) return Bad("profile takes no positional arguments");
    if (cmd.pids.size() != 1) return Bad("profile needs exactly one --pid=PID");
    cmd.kind = Command::Kind::kProfile;
    cmd.pid = cmd.pids[0];
    if (!cmd.format_given) cmd.format = Format::kPprof;
  } else if (positional[0] == "check-sframe") {
    if (positional.size() != 2) return Bad("check-sframe takes exactly one FILE");
    if (!cmd.tids.empty() || cmd.sources_given || cmd.max_frames != 0) {
      return Bad("check-sframe takes no --tid, --sources or --max-frames");
    }
    if (!cmd.debug_dirs.empty() || !cmd.debuginfod_urls.empty() || cmd.symbols) {
      return Bad("check-sframe takes no --debug-dir, --debuginfod or --symbols");
    }
    cmd.kind = Command::Kind::kCheckSframe;
    cmd.path = std::string(positional[1]);
  } else {
    return Bad(absl::StrCat("unknown command '", positional[0], "'"));
  }
  if (cmd.core_backtrace && cmd.kind != Command::Kind::kCore &&
      cmd.kind != Command::Kind::kMinidump && cmd.kind != Command::Kind::kCoredump) {
    return Bad("--format=core-backtrace is for core, minidump and coredump");
  }
  const bool sampling = cmd.kind == Command::Kind::kPerf || cmd.kind == Command::Kind::kProfile;
  if (sampling) {
    if (cmd.format == Format::kText) return Bad("--format=text is for pid, core and demo");
  } else {
    if (cmd.format != Format::kText && cmd.format != Format::kJson) {
      return Bad("--format=pprof, folded and perf-script are for perf and profile");
    }
    if (!cmd.output.empty() || !cmd.pids.empty() || !cmd.comms.empty() || cmd.jobs != 0 ||
        cmd.duration_s != 0) {
      return Bad("-o, --pid, --comm, --jobs and --duration are for perf and profile");
    }
  }
  if (cmd.kind == Command::Kind::kProfile && (!cmd.tids.empty() || !cmd.comms.empty())) {
    return Bad("profile samples every thread of --pid: no --tid or --comm");
  }
  if (!cmd.debuginfod_urls.empty() && cmd.no_debuginfod) {
    return Bad("--debuginfod and --no-debuginfod exclude each other");
  }
  const bool post_mortem = cmd.kind == Command::Kind::kCore ||
                           cmd.kind == Command::Kind::kMinidump ||
                           cmd.kind == Command::Kind::kCoredump;
  if (!post_mortem && (!cmd.exe.empty() || !cmd.path_maps.empty() ||
                       (!cmd.sysroot.empty() && cmd.kind != Command::Kind::kPerf))) {
    return Bad("--exe and --path-map apply to core, minidump and coredump only, "
               "--sysroot to those and perf");
  }
  if (!cmd.minidump_out.empty() && cmd.kind != Command::Kind::kCore &&
      cmd.kind != Command::Kind::kPid && cmd.kind != Command::Kind::kCoredump) {
    return Bad("--minidump applies to core, pid and coredump");
  }
  if ((!cmd.journal_files.empty() || !cmd.journal_directory.empty()) &&
      cmd.kind != Command::Kind::kCoredump) {
    return Bad("--file and --directory apply to coredump only");
  }
  if (!cmd.journal_files.empty() && !cmd.journal_directory.empty()) {
    return Bad("--file and --directory exclude each other");
  }
  return cmd;
}

}  // namespace unwindd::service
