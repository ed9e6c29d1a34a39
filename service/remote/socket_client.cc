#include "service/remote/socket_client.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "service/common/unwinder_messages.h"
#include "service/common/version.h"
#include "service/remote/render.h"
#include "service/remote/unix_call.h"

namespace unwindd::service {

int RunSocketClient(const SocketClientCall& call) {
  const Command& cmd = call.cmd;
  const std::string target = absl::StrCat("unix:", call.socket_path);
  UnixCallOptions options;
  options.user_agent = VersionLine("unwind");
  absl::StatusOr<std::string> answer =
      UnixUnaryCall(call.socket_path, "/unwindd.v1.Unwinder/UnwindProcess",
                    ProcessRequest(cmd, cmd.pid).SerializeAsString(), options);
  if (!answer.ok()) return FailCall(target, answer.status(), cmd);
  v1::UnwindResponse response;
  if (!response.ParseFromString(*answer)) {
    return Fail(absl::StrCat("unwindd at ", target, " answered what is not an UnwindResponse"));
  }
  return PrintResponse(cmd, response);
}

}  // namespace unwindd::service
