#include "service/remote/render.h"

#include <unistd.h>

#include <cstdio>
#include <memory>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "service/cli/binaries.h"
#include "service/cli/output.h"
#include "service/common/convert.h"

namespace unwindd::service {

int Fail(absl::string_view msg) {
  std::fprintf(stderr, "unwind: %.*s\n", static_cast<int>(msg.size()), msg.data());
  return 1;
}

std::string Absolute(const std::string& path) {
  if (path.empty() || path[0] == '/') return path;
  char cwd[4096];
  if (getcwd(cwd, sizeof(cwd)) == nullptr) return path;
  return absl::StrCat(cwd, "/", path);
}

v1::UnwindProcessRequest ProcessRequest(const Command& cmd, pid_t pid) {
  v1::UnwindProcessRequest request;
  request.set_pid(pid);
  for (pid_t t : cmd.tids) request.add_tids(t);
  request.set_max_frames(cmd.max_frames);
  if (cmd.sources_given) SourcesToProto(cmd.sources, request.mutable_sources());
  for (const std::string& d : cmd.debug_dirs) request.add_debug_dirs(Absolute(d));
  // --debuginfod asks the server to use its own servers (its --debuginfod).
  request.set_debuginfod(!cmd.debuginfod_urls.empty());
  return request;
}

std::string WithCoreName(absl::string_view text, absl::string_view core) {
  static constexpr absl::string_view kFd = "/proc/self/fd/";
  std::string out;
  for (size_t at; (at = text.find(kFd)) != absl::string_view::npos;) {
    size_t end = at + kFd.size();
    while (end < text.size() && absl::ascii_isdigit(text[end])) ++end;
    if (end == at + kFd.size()) {  // not followed by a number: keep it
      out.append(text.data(), end);
    } else {
      absl::StrAppend(&out, text.substr(0, at), core);
    }
    text.remove_prefix(end);
  }
  absl::StrAppend(&out, text);
  return out;
}

int Unreachable(absl::string_view target, const absl::Status& s) {
  return Fail(absl::StrCat("cannot reach unwindd at ", target, ": ", s.message()));
}

int FailCall(absl::string_view target, const absl::Status& s, const Command& cmd) {
  if (absl::IsUnavailable(s)) return Unreachable(target, s);
  return Fail(WithCoreName(s.message(), cmd.core));
}

int PrintResponse(const Command& cmd, const v1::UnwindResponse& response) {
  absl::StatusOr<unwinder::ProcessStacks> stacks = FromProto(response);
  if (!stacks.ok()) return Fail(stacks.status().message());
  // As `unwind core` does: the core's report in the output, and every
  // problem with it on stderr too.
  std::optional<CoreSummary> core;
  std::optional<CrashSignature> signature;
  const ModulePackages packages = PackagesFromProto(response);
  if (cmd.kind == Command::Kind::kCore || cmd.kind == Command::Kind::kMinidump) {
    signature = FromProto(response.signature());
    core = FromProto(response.core(), cmd.core);
    for (std::string& w : core->warnings) {
      w = WithCoreName(w, cmd.core);
      std::fprintf(stderr, "unwind: warning: %s\n", w.c_str());
    }
  }
  const CoreSummary* summary = core ? &*core : nullptr;
  // --symbols: here, from the files the server used, where this client may
  // read them (the server stays symbol-free); never through debuginfod.
  FrameSymbols symbols;
  if (cmd.symbols) {
    Command local = cmd;
    local.no_debuginfod = true;
    local.debuginfod_urls.clear();
    absl::StatusOr<std::unique_ptr<Binaries>> b = Binaries::FromCommand(local);
    if (!b.ok()) return Fail(b.status().message());
    symbols = (*b)->Symbolize(*stacks);
  }
  const FrameSymbols* sym = cmd.symbols ? &symbols : nullptr;
  const OutputExtras extras{.core = summary,
                            .symbols = sym,
                            .signature = signature ? &*signature : nullptr,
                            .packages = &packages};
  std::string out = cmd.format == Format::kJson ? FormatJson(*stacks, extras)
                                                : FormatText(*stacks, extras);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return std::fflush(stdout) == 0 ? 0 : 1;
}

}  // namespace unwindd::service
