// `unwind`: the command-line unwinder (DESIGN.md "CLI"). The in-process path
// links no gRPC or protobuf, so it starts in about a millisecond.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "proc/live_target.h"
#include "service/cli/args.h"
#include "service/cli/binaries.h"
#include "service/cli/core_command.h"
#include "service/cli/coredump_entry.h"
#include "service/cli/demo.h"
#include "service/cli/jit_code.h"
#include "service/cli/minidump_out.h"
#include "service/cli/output.h"
#include "service/cli/perf/perf_command.h"
#include "service/cli/perf/profile_command.h"
#include "service/cli/remote_exec.h"
#include "service/cli/usage.h"
#include "service/common/version.h"
#include "service/remote/socket_client.h"
#include "unwinder/module.h"
#include "unwinder/module_cache.h"
#include "unwinder/sframe/check.h"
#include "unwinder/unwinder.h"

namespace {

std::atomic<bool> g_interrupted{false};

// SIGINT/SIGTERM stop the walk between frames; the stack then unwinds
// normally so every ptrace attachment is detached by its RAII owner. A
// second one ends the process as the signal would have: the command did
// not stop at the first (it waits to open or read a FIFO no one writes
// to, say), and a user who presses Ctrl-C twice wants it gone. The kernel
// detaches and resumes any thread still attached when this process ends.
void OnSignal(int sig) {
  if (g_interrupted.exchange(true)) {
    signal(sig, SIG_DFL);
    raise(sig);  // delivered when this handler returns
  }
}

void Warn(absl::string_view msg) {
  std::fprintf(stderr, "unwind: warning: %.*s\n", static_cast<int>(msg.size()), msg.data());
}

// CAP_SYS_PTRACE in this process's effective set (/proc/self/status).
bool HasPtraceCapability() {
  std::FILE* f = std::fopen("/proc/self/status", "re");
  if (f == nullptr) return false;
  char line[256];
  unsigned long long eff = 0;
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    if (std::sscanf(line, "CapEff: %llx", &eff) == 1) break;
  }
  std::fclose(f);
  constexpr int kCapSysPtrace = 19;  // linux/capability.h
  return (eff >> kCapSysPtrace) & 1;
}

int Fail(absl::string_view msg) {
  std::fprintf(stderr, "unwind: %.*s\n", static_cast<int>(msg.size()), msg.data());
  return 1;
}

// `unwind check-sframe FILE`: exit 0 when .sframe and .eh_frame agree
// everywhere both cover, 3 when they disagree (the report says where), 1 when
// the file cannot be checked.
int CheckSframe(const std::string& path) {
  absl::StatusOr<std::shared_ptr<unwindd::unwinder::Module>> module =
      unwindd::unwinder::Module::OpenFile(path);
  if (!module.ok()) return Fail(module.status().message());
  absl::StatusOr<unwindd::unwinder::sframe::CheckReport> report =
      unwindd::unwinder::sframe::CheckSframe(**module);
  if (!report.ok()) return Fail(report.status().message());
  std::string out = unwindd::unwinder::sframe::FormatCheckReport(*report);
  std::fwrite(out.data(), 1, out.size(), stdout);
  if (std::fflush(stdout) != 0) return 1;
  return report->ok() ? 0 : 3;
}

int Run(const unwindd::service::Command& cmd, char** argv) {
  using unwindd::service::Command;
  if (cmd.kind == Command::Kind::kCheckSframe) return CheckSframe(cmd.path);
  if (cmd.kind == Command::Kind::kCore) {
    return unwindd::service::RunCore(cmd, &g_interrupted);
  }
  if (cmd.kind == Command::Kind::kMinidump) {
    return unwindd::service::RunMinidump(cmd, &g_interrupted);
  }
  if (cmd.kind == Command::Kind::kCoredump) {
    return unwindd::service::RunCoredumpCommand(cmd, argv, &g_interrupted);
  }
  if (cmd.kind == Command::Kind::kPerf) {
    return unwindd::service::perf::RunPerf(cmd, &g_interrupted);
  }
  if (cmd.kind == Command::Kind::kProfile) {
    return unwindd::service::perf::RunProfile(cmd, &g_interrupted);
  }
  absl::StatusOr<std::unique_ptr<unwindd::service::Binaries>> binaries =
      unwindd::service::Binaries::FromCommand(cmd);
  if (!binaries.ok()) return Fail(binaries.status().message());
  std::unique_ptr<unwindd::service::DemoProcess> demo;
  pid_t pid = cmd.pid;
  if (cmd.kind == Command::Kind::kDemo) {
    absl::StatusOr<std::unique_ptr<unwindd::service::DemoProcess>> d =
        unwindd::service::DemoProcess::Start();
    if (!d.ok()) return Fail(d.status().message());
    demo = *std::move(d);
    pid = demo->pid();
  }
  // Alive until the process exits: the package notes below come from the
  // modules it opened, and exit unmaps their files all at once, cheaper
  // than a munmap each (a tenth of a one-shot command's time). No row
  // cache: each thread is walked once, a PC met again is the step cache's,
  // and ~1.4 KiB a cached row was fresh heap, a page fault every third row.
  static unwindd::unwinder::ModuleCache* const cache = new unwindd::unwinder::ModuleCache(
      unwindd::unwinder::ModuleCache::kDefaultMaxBytes, /*max_row_bytes=*/0);
  unwindd::unwinder::ProcessStacks stacks;
  {
    // A thread that does not stop (uninterruptible sleep) is walked from
    // where the kernel shows it blocked, not waited for: this process
    // exits soon after, which releases it (live_target.h).
    unwindd::proc::AttachOptions attach;
    if (cmd.kind == unwindd::service::Command::Kind::kPid && cmd.stop_timeout_s > 0) {
      attach.stop_timeout = absl::Seconds(cmd.stop_timeout_s);
    }
    absl::StatusOr<std::unique_ptr<unwindd::proc::Target>> target =
        unwindd::proc::AttachLive(pid, cmd.tids, attach);
    if (!target.ok()) {
      if (absl::IsPermissionDenied(target.status()) && !HasPtraceCapability()) {
        return Fail(absl::StrCat(
            target.status().message(),
            " (another user's process, or any but this one's own descendants "
            "under Yama's ptrace_scope, needs CAP_SYS_PTRACE, which this unwind, "
            "uid ", getuid(), ", does not have)"));
      }
      return Fail(target.status().message());
    }
    unwindd::unwinder::UnwindOptions options;
    if (cmd.max_frames > 0) options.max_frames = cmd.max_frames;
    options.sources = cmd.sources;
    options.cancel = &g_interrupted;
    options.locate = &(*binaries)->locate_options();
    std::vector<std::string> warnings;
    stacks = unwindd::service::UnwindWithAnnouncedCode(**target, *cache, options, &warnings);
    for (const std::string& w : warnings) Warn(w);
    // The minidump is written while the threads are still stopped, from
    // the same registers and memory.
    if (!cmd.minidump_out.empty() && !g_interrupted.load()) {
      const unwindd::proc::minidump::ProcessInfo info =
          unwindd::service::LiveProcessInfo(pid);
      if (int rc = unwindd::service::WriteMinidumpReport(
              **target, info, cmd, stacks, unwindd::service::CoreSizeEstimate(**target),
              "a core of it (its logical size: sparse on disk)");
          rc != 0) {
        return rc;
      }
    }
  }  // detached here
  if (g_interrupted.load()) return Fail("interrupted");
  unwindd::service::FrameSymbols symbols;
  if (cmd.symbols) symbols = (*binaries)->Symbolize(stacks);
  const unwindd::service::FrameSymbols* sym = cmd.symbols ? &symbols : nullptr;
  // Each module's ELF package note, from the module the unwind opened
  // (read after the detach, so the threads are not kept stopped for it).
  const unwindd::service::ModulePackages packages =
      unwindd::service::FindModulePackages(stacks, nullptr, cache);
  const unwindd::service::OutputExtras extras{.symbols = sym, .packages = &packages};
  // Written as it is made (output.h): no page faults for a deep stack's
  // whole text.
  unwindd::service::WriteStacks(stacks, extras, cmd.format == unwindd::service::Format::kJson,
                                stdout);
  return std::fflush(stdout) == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  // Debian builds Abseil with the Mutex deadlock detector on: its lock
  // graph costs every run three 64 KiB arenas, their page faults and a
  // graph update per lock, for locks a one-shot command takes a few times.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  const std::vector<absl::string_view> raw(argv + 1, argv + argc);
  absl::StatusOr<std::vector<std::string>> normalized =
      unwindd::service::NormalizeArgs(raw);
  std::vector<absl::string_view> args;
  if (normalized.ok()) args.assign(normalized->begin(), normalized->end());
  // --server: `pid` through a Unix socket is one call made here, without
  // gRPC (socket_client.h); unwind_remote (gRPC) does the rest
  // (remote_exec.h). Same output either way; help is the same text, and
  // printed here.
  const bool help = std::find_if(args.begin(), args.end(), [](absl::string_view a) {
                      return a == "-h" || a == "--help";
                    }) != args.end();
  if (normalized.ok() && !help && unwindd::service::WantsServer(args)) {
    if (auto call = unwindd::service::ForSocketClient(args)) {
      return unwindd::service::RunSocketClient(*call);
    }
    return unwindd::service::ExecRemote(argv);
  }
  absl::StatusOr<unwindd::service::Command> cmd =
      normalized.ok() ? unwindd::service::ParseCommandLine(args)
                      : absl::StatusOr<unwindd::service::Command>(normalized.status());
  if (!cmd.ok()) {
    // One line: the error and where the command's usage is.
    Fail(absl::StrCat(cmd.status().message(), " ", unwindd::service::SeeHelp(raw)));
    return 2;
  }
  using Kind = unwindd::service::Command::Kind;
  if (cmd->kind == Kind::kHelp) {
    const unwindd::service::CommandUsage* u =
        unwindd::service::FindCommandUsage(cmd->help_topic);
    std::string text(u != nullptr ? u->text : unwindd::service::kUsage);
    std::fwrite(text.data(), 1, text.size(), stdout);
    return std::fflush(stdout) == 0 ? 0 : 1;
  }
  if (cmd->kind == Kind::kVersion) {
    std::printf("%s\n", unwindd::service::VersionLine("unwind").c_str());
    return std::fflush(stdout) == 0 ? 0 : 1;
  }
  if (cmd->kind == Kind::kHealth || cmd->kind == Kind::kStats) {
    Fail(absl::StrCat(cmd->kind == Kind::kHealth ? "health" : "stats",
                      " asks a running unwindd: it needs --server=ADDRESS ",
                      unwindd::service::SeeHelp(raw)));
    return 2;
  }
  // The static build cannot load libdebuginfod: its glibc-shared twin does
  // the whole command instead (remote_exec.h).
  if (unwindd::service::NeedsDebuginfodTwin(cmd->debuginfod_urls)) {
    return unwindd::service::ExecDebuginfodTwin(argv);
  }
  struct sigaction sa = {};
  sa.sa_handler = OnSignal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  return Run(*cmd, argv);
}
