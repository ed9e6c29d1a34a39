#include "service/remote/socket_client.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "service/cli/args.h"
#include "service/common/unwinder_messages.h"
#include "service/common/version.h"
#include "service/remote/render.h"
#include "service/remote/unix_call.h"

namespace unwindd::service {

int RunSocketClient(absl::Span<const absl::string_view> args) {
  std::string socket_path;
  std::vector<absl::string_view> rest;
  for (absl::string_view a : args) {
    if (absl::ConsumePrefix(&a, "--server=")) {
      socket_path = std::string(absl::StripPrefix(a, "unix:"));  // the last one, as gRPC's
    } else {
      rest.push_back(a);
    }
  }
  absl::StatusOr<Command> cmd = ParseCommandLine(rest);
  if (!cmd.ok()) return Fail(cmd.status().message());  // ForSocketClient parsed it
  const std::string target = absl::StrCat("unix:", socket_path);
  UnixCallOptions options;
  options.user_agent = VersionLine("unwind");
  absl::StatusOr<std::string> answer =
      UnixUnaryCall(socket_path, "/unwindd.v1.Unwinder/UnwindProcess",
                    ProcessRequest(*cmd, cmd->pid).SerializeAsString(), options);
  if (!answer.ok()) return FailCall(target, answer.status(), *cmd);
  v1::UnwindResponse response;
  if (!response.ParseFromString(*answer)) {
    return Fail(absl::StrCat("unwindd at ", target, " answered what is not an UnwindResponse"));
  }
  return PrintResponse(*cmd, response);
}

}  // namespace unwindd::service
