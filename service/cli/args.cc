#include "service/cli/args.h"

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "service/cli/usage.h"
#include "unwinder/unwinder.h"

namespace unwindd::service {

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

// Flags that take a value: `--flag VALUE` is read as `--flag=VALUE`.
constexpr absl::string_view kValueFlags[] = {
    "--tid", "--format", "--output", "--pid", "--comm", "--jobs", "--duration",
    "--frequency", "--max-frames", "--stop-timeout", "--sources", "--exe", "--sysroot", "--path-map",
    "--debug-dir", "--debuginfod", "--debuginfod-timeout", "--debuginfod-max-bytes",
    "--minidump-stack-bytes", "--minidump", "--file", "--directory",
    // unwind_remote's own (remote/main.cc).
    "--server", "--tls-ca", "--tls-cert", "--tls-key",
};

// `unwind help TOPIC`, `unwind TOPIC --help`: TOPIC's usage ("" for the
// overview).
absl::StatusOr<Command> Help(absl::string_view topic) {
  if (!topic.empty() && FindCommandUsage(topic) == nullptr) {
    return Bad(absl::StrCat("unknown command '", topic, "'"));
  }
  Command cmd;
  cmd.kind = Command::Kind::kHelp;
  cmd.help_topic = std::string(topic);
  return cmd;
}

}  // namespace

absl::string_view CommandName(Command::Kind kind) {
  switch (kind) {
    case Command::Kind::kPid: return "pid";
    case Command::Kind::kDemo: return "demo";
    case Command::Kind::kCheckSframe: return "check-sframe";
    case Command::Kind::kCore: return "core";
    case Command::Kind::kPerf: return "perf";
    case Command::Kind::kProfile: return "profile";
    case Command::Kind::kMinidump: return "minidump";
    case Command::Kind::kCoredump: return "coredump";
    case Command::Kind::kHelp: return "help";
    case Command::Kind::kVersion: return "--version";
    case Command::Kind::kHealth: return "health";
    case Command::Kind::kStats: return "stats";
  }
  return "?";
}

absl::StatusOr<std::vector<std::string>> NormalizeArgs(
    absl::Span<const absl::string_view> args) {
  std::vector<std::string> out;
  out.reserve(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    const absl::string_view a = args[i];
    if (a == "-o") {
      if (i + 1 >= args.size()) return Bad("-o needs a FILE");
      out.push_back(absl::StrCat("--output=", args[++i]));
      continue;
    }
    bool joined = false;
    for (absl::string_view flag : kValueFlags) {
      if (a != flag) continue;
      if (i + 1 >= args.size()) {
        return Bad(absl::StrCat(flag, " needs a value (", flag, "=VALUE)"));
      }
      out.push_back(absl::StrCat(flag, "=", args[++i]));
      joined = true;
      break;
    }
    if (!joined) out.push_back(std::string(a));
  }
  return out;
}

absl::StatusOr<Command> ParseCommandLine(absl::Span<const absl::string_view> raw_args) {
  absl::StatusOr<std::vector<std::string>> normalized = NormalizeArgs(raw_args);
  if (!normalized.ok()) return normalized.status();
  const std::vector<absl::string_view> args(normalized->begin(), normalized->end());
  for (absl::string_view a : args) {
    if (a != "-h" && a != "--help") continue;
    // The help of the command named (the first word that is no flag).
    for (absl::string_view w : args) {
      if (!absl::StartsWith(w, "-")) return Help(w);
    }
    return Help("");
  }
  if (!args.empty() && args[0] == "help") {
    if (args.size() > 2) return Bad("help takes at most one COMMAND");
    return Help(args.size() == 2 ? args[1] : "");
  }
  if (args.size() == 1 && args[0] == "--version") {
    Command cmd;
    cmd.kind = Command::Kind::kVersion;
    return cmd;
  }
  Command cmd;
  std::vector<absl::string_view> positional;
  for (size_t i = 0; i < args.size(); ++i) {
    absl::string_view a = args[i];
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
    } else if (absl::ConsumePrefix(&a, "--stop-timeout=")) {
      double d = 0;
      if (!absl::SimpleAtod(a, &d) || !(d >= 0) || d > 86400) {
        return Bad(absl::StrCat("invalid stop timeout '", a, "'"));
      }
      cmd.stop_timeout_s = d;
      cmd.stop_timeout_given = true;
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
    } else if (a == "--force" || a == "-f") {
      cmd.force = true;
    } else if (a == "--version") {
      return Bad("--version takes no command: unwind --version");
    } else if (absl::StartsWith(a, "--server=") || absl::StartsWith(a, "--tls-")) {
      // With --server, unwind execs unwind_remote, which takes these out
      // before it parses: a --tls-* here came without --server.
      return Bad(absl::StrCat(a.substr(0, a.find('=')), " needs --server=ADDRESS"));
    } else if (absl::StartsWith(a, "-") && a != "-") {  // "-": stdin (perf)
      return Bad(absl::StrCat("unknown option '", a, "'"));
    } else {
      positional.push_back(a);
    }
  }
  if (positional.empty()) {
    return Bad("missing command (pid, core, minidump, coredump, demo, perf, profile, "
               "check-sframe, health or stats)");
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
  } else if (positional[0] == "health" || positional[0] == "stats") {
    if (positional.size() != 1) {
      return Bad(absl::StrCat(positional[0], " takes no arguments"));
    }
    cmd.kind = positional[0] == "health" ? Command::Kind::kHealth : Command::Kind::kStats;
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
  if (cmd.force && !sampling) return Bad("--force is for perf and profile");
  if (cmd.stop_timeout_given && cmd.kind != Command::Kind::kPid) {
    return Bad("--stop-timeout is for pid");
  }
  if (cmd.kind == Command::Kind::kHealth || cmd.kind == Command::Kind::kStats) {
    if (!cmd.tids.empty() || cmd.max_frames != 0 || cmd.sources_given ||
        !cmd.debug_dirs.empty() || !cmd.debuginfod_urls.empty() || cmd.no_debuginfod ||
        cmd.symbols || !cmd.minidump_out.empty() ||
        (cmd.kind == Command::Kind::kHealth && cmd.format_given)) {
      return Bad(cmd.kind == Command::Kind::kHealth ? "health takes no flags"
                                                    : "stats takes only --format");
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
