// `unwind --server=unix:PATH pid PID ...` in the CLI's own process: the
// one UnwindProcess call over HTTP/2 on the Unix socket (unix_call.h),
// without gRPC, printed as the in-process CLI prints its own unwind
// (render.h). What a debugger or a watchdog asks of an unwindd on its own
// machine costs about what unwinding in process does: no second program
// to start, no gRPC (docs/speed.md). Every other --server command line
// goes to unwind_remote, the gRPC client (cli/remote_exec.h).
//
//   if (auto call = ForSocketClient(args)) return RunSocketClient(*call);
#ifndef UNWINDD_SERVICE_REMOTE_SOCKET_CLIENT_H_
#define UNWINDD_SERVICE_REMOTE_SOCKET_CLIENT_H_

#include "service/cli/remote_exec.h"

namespace unwindd::service {

// `call` (cli/remote_exec.h ForSocketClient) made to the server: the
// answer on stdout, or one line on stderr. The exit code.
int RunSocketClient(const SocketClientCall& call);

}  // namespace unwindd::service

#endif  // UNWINDD_SERVICE_REMOTE_SOCKET_CLIENT_H_
