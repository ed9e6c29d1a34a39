// `unwind --server=ADDRESS ...`: `pid` through a server on this machine's
// Unix socket is one call that `unwind` makes itself, over HTTP/2 without
// gRPC (service/remote/socket_client.h); for everything else the CLI
// hands the whole command line to its sibling binary `unwind_remote`,
// which links gRPC. Keeping gRPC out of `unwind` keeps its start-up at
// about a millisecond (linking grpc++ alone costs ~16 ms).
//
//   if (WantsServer(args)) {
//     if (auto call = ForSocketClient(args)) return RunSocketClient(*call);
//     return ExecRemote(argv);   // returns only on error
//   }
#ifndef UNWINDD_SERVICE_CLI_REMOTE_EXEC_H_
#define UNWINDD_SERVICE_CLI_REMOTE_EXEC_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "service/cli/args.h"

namespace unwindd::service {

// True if the command line has --server=ADDRESS.
bool WantsServer(absl::Span<const absl::string_view> args);

// A command line for the in-process socket client: the socket's path and
// the command.
struct SocketClientCall {
  std::string socket_path;
  Command cmd;
};

// The call if `args` (normalized: NormalizeArgs) are for the in-process
// socket client: `pid` with --server=unix:PATH (the last --server; not
// unix://...), no --tls-*, and nothing that only unwind_remote says it
// refuses (--format=core-backtrace, --minidump). nullopt otherwise.
std::optional<SocketClientCall> ForSocketClient(absl::Span<const absl::string_view> args);

// unwind_remote next to this executable (bazel-bin/service/), or in its
// runfiles.
absl::StatusOr<std::string> FindRemoteBinary();

// Replaces this process with unwind_remote, same arguments. Returns (1,
// after printing why) only if that fails.
int ExecRemote(char** argv);

// `unwind` is linked fully static (third_party/system/static_cli.bzl), and a
// static program cannot load libdebuginfod (and libcurl behind it) into
// itself. A command that would fetch from debuginfod (--debuginfod=URL or
// $DEBUGINFOD_URLS, and no --no-debuginfod) is handed, same arguments, to
// `unwind_debuginfod`: the same CLI with glibc shared, which dlopen()s it.
// So is any command while $DEBUGINFOD_URLS is set, --no-debuginfod or not:
// libdw (--symbols) would dlopen() the library on its own then.
//
//   if (NeedsDebuginfodTwin(cmd.debuginfod_urls)) return ExecDebuginfodTwin(argv);
//
// True only in a static build (no program interpreter) and for such a
// command.
bool NeedsDebuginfodTwin(absl::string_view debuginfod_urls);
// Replaces this process with unwind_debuginfod; returns 1 (after printing
// why) only if that fails.
int ExecDebuginfodTwin(char** argv);

// `unwind coredump` reads the journal with libsystemd, a shared library
// only (coredump_entry.h): replaces this process with unwind_coredump,
// the CLI with glibc and libsystemd shared; returns 1 only if that fails.
int ExecCoredumpTwin(char** argv);

}  // namespace unwindd::service

#endif  // UNWINDD_SERVICE_CLI_REMOTE_EXEC_H_
