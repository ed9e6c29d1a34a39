#include "service/cli/args.h"

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "unwinder/unwinder.h"

namespace unwindd::service {

const char kUsage[] =
    "usage: unwind pid PID [--tid=TID]... [--format=text|json] [--max-frames=N]\n"
    "                      [--sources=LIST]\n"
    "       unwind demo [--format=text|json] [--max-frames=N] [--sources=LIST]\n"
    "       unwind core CORE [--exe=PATH] [--sysroot=DIR] [--path-map=OLD=NEW]...\n"
    "                        [--tid=TID]... [--format=text|json] [--max-frames=N]\n"
    "                        [--sources=LIST]\n"
    "       unwind check-sframe FILE\n"
    "  --sources=LIST  unwind sources to use, in order, from eh_frame,\n"
    "                  debug_frame, sframe, fp (default: all four, in that order)\n"
    "  pid, demo and core also take:\n"
    "  --debug-dir=DIR  where separate debug files are (repeatable; default\n"
    "                   /usr/lib/debug): DIR/.build-id/xx/rest.debug and\n"
    "                   DIR/<file's directory>/<.gnu_debuglink name>\n"
    "  --debuginfod=URL  fetch missing files and debug info by build-id from\n"
    "                   these servers (default: $DEBUGINFOD_URLS);\n"
    "                   --no-debuginfod: never\n"
    "  --debuginfod-timeout=S, --debuginfod-max-bytes=N  bounds per request\n"
    "                   (default 30 s, 1 GiB)\n"
    "  --symbols        function+offset per frame (like eu-stack)\n";

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
  for (absl::string_view a : args) {
    if (a == "-h" || a == "--help") {
      cmd.kind = Command::Kind::kHelp;
      return cmd;
    }
    if (absl::ConsumePrefix(&a, "--tid=")) {
      absl::StatusOr<int64_t> t = PositiveNumber("thread id", a, INT32_MAX);
      if (!t.ok()) return t.status();
      cmd.tids.push_back(static_cast<pid_t>(*t));
    } else if (absl::ConsumePrefix(&a, "--format=")) {
      if (a == "text") {
        cmd.format = Format::kText;
      } else if (a == "json") {
        cmd.format = Format::kJson;
      } else {
        return Bad(absl::StrCat("unknown format '", a, "' (text or json)"));
      }
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
    } else if (absl::StartsWith(a, "-")) {
      return Bad(absl::StrCat("unknown option '", a, "'"));
    } else {
      positional.push_back(a);
    }
  }
  if (positional.empty()) return Bad("missing command (pid, core, demo or check-sframe)");
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
  if (!cmd.debuginfod_urls.empty() && cmd.no_debuginfod) {
    return Bad("--debuginfod and --no-debuginfod exclude each other");
  }
  if (cmd.kind != Command::Kind::kCore &&
      (!cmd.exe.empty() || !cmd.sysroot.empty() || !cmd.path_maps.empty())) {
    return Bad("--exe, --sysroot and --path-map apply to core only");
  }
  return cmd;
}

}  // namespace unwindd::service
