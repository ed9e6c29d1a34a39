// What both clients of a running unwindd share (unwind_remote, the gRPC
// client, and the socket client in `unwind`, which calls a server on this
// machine's Unix socket without gRPC: socket_client.h): the request a
// command line makes, and how an answer is printed, exactly as the
// in-process CLI prints it.
//
//   v1::UnwindProcessRequest request = ProcessRequest(cmd, pid);
//   ... the call ...
//   if (!answer.ok()) return FailCall(target, answer.status(), cmd);
//   return PrintResponse(cmd, *answer);
#ifndef UNWINDD_SERVICE_REMOTE_RENDER_H_
#define UNWINDD_SERVICE_REMOTE_RENDER_H_

#include <sys/types.h>

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "service/common/unwinder_messages.h"
#include "service/cli/args.h"

namespace unwindd::service {

// "unwind: MSG" on stderr; 1.
int Fail(absl::string_view msg);

// A path the server opens, made absolute against this process's working
// directory (the server's is another).
std::string Absolute(const std::string& path);

// `cmd` (pid or demo) as the UnwindProcess request for `pid`.
v1::UnwindProcessRequest ProcessRequest(const Command& cmd, pid_t pid);

// `text` with the server's /proc/self/fd/N names of a core replaced by the
// CORE argument, as `unwind core` names it.
std::string WithCoreName(absl::string_view text, absl::string_view core);

// "cannot reach unwindd at TARGET: MESSAGE" on stderr (Fail); 1.
int Unreachable(absl::string_view target, const absl::Status& s);

// A failed call: Unreachable for UNAVAILABLE, the server's message
// otherwise. 1.
int FailCall(absl::string_view target, const absl::Status& s, const Command& cmd);

// The answer to `cmd` on stdout (a core's warnings on stderr too), as the
// in-process CLI prints it; --symbols from the files the server used. The
// exit code.
int PrintResponse(const Command& cmd, const v1::UnwindResponse& response);

}  // namespace unwindd::service

#endif  // UNWINDD_SERVICE_REMOTE_RENDER_H_
