// unwind_socket: what `unwind --server=unix:PATH pid PID` runs
// (cli/remote_exec.h). The same command line and output as unwind_remote,
// for the one call a debugger or a watchdog makes of an unwindd on its own
// machine: UnwindProcess over HTTP/2 on the Unix socket, in this thread,
// without gRPC (unix_call.h). Any other command line it hands on to
// unwind_remote, so that it answers whatever `unwind --server` answers.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "service/common/unwinder_messages.h"
#include "service/cli/args.h"
#include "service/cli/remote_exec.h"
#include "service/cli/usage.h"
#include "service/common/version.h"
#include "service/remote/render.h"
#include "service/remote/unix_call.h"

int main(int argc, char** argv) {
  namespace service = unwindd::service;
  // As in unwind: no lock-order graph for a one-call client.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  const std::vector<absl::string_view> raw(argv + 1, argv + argc);
  absl::StatusOr<std::vector<std::string>> normalized = service::NormalizeArgs(raw);
  std::vector<absl::string_view> args;
  if (normalized.ok()) args.assign(normalized->begin(), normalized->end());
  if (!normalized.ok() || !service::ForSocketClient(args)) return service::ExecRemote(argv);
  std::string socket_path;
  std::vector<absl::string_view> rest;
  for (absl::string_view a : args) {
    if (absl::ConsumePrefix(&a, "--server=unix:")) {
      socket_path = std::string(a);
    } else {
      rest.push_back(a);
    }
  }
  absl::StatusOr<service::Command> cmd = service::ParseCommandLine(rest);
  if (!cmd.ok()) return service::ExecRemote(argv);  // ForSocketClient parsed it
  const std::string target = absl::StrCat("unix:", socket_path);
  service::UnixCallOptions options;
  options.user_agent = service::VersionLine("unwind");
  absl::StatusOr<std::string> answer = service::UnixUnaryCall(
      socket_path, "/unwindd.v1.Unwinder/UnwindProcess",
      service::ProcessRequest(*cmd, cmd->pid).SerializeAsString(), options);
  if (!answer.ok()) return service::FailCall(target, answer.status(), *cmd);
  unwindd::v1::UnwindResponse response;
  if (!response.ParseFromString(*answer)) {
    return service::Fail(absl::StrCat("unwindd at ", target, " answered what is not an UnwindResponse"));
  }
  return service::PrintResponse(*cmd, response);
}
