// `unwind --server=ADDRESS ...`: the in-process CLI hands the whole command
// line to a sibling binary. `unwind pid` through a server on this
// machine's Unix socket goes to `unwind_socket`, which makes that one call
// over HTTP/2 without gRPC (libnghttp2; service/remote/unix_call.h);
// everything else to `unwind_remote`, which links gRPC. Keeping gRPC and
// protobuf out of `unwind` keeps its start-up at about a millisecond
// (protobuf alone adds a quarter of one, grpc++ 16 ms shared).
//
//   if (WantsServer(args)) return ExecServerClient(argv, args);  // only on error
#ifndef UNWINDD_SERVICE_CLI_REMOTE_EXEC_H_
#define UNWINDD_SERVICE_CLI_REMOTE_EXEC_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace unwindd::service {

// True if the command line has --server=ADDRESS.
bool WantsServer(absl::Span<const absl::string_view> args);

// True if `args` (normalized: NormalizeArgs) are for unwind_socket: `pid`
// with --server=unix:PATH (not unix://...), no --tls-*, and nothing that
// only unwind_remote says it refuses (--format=core-backtrace,
// --minidump).
bool ForSocketClient(absl::Span<const absl::string_view> args);

// unwind_remote next to this executable (bazel-bin/service/), or in its
// runfiles.
absl::StatusOr<std::string> FindRemoteBinary();

// Replaces this process with unwind_remote, same arguments. Returns (1,
// after printing why) only if that fails.
int ExecRemote(char** argv);

// Replaces this process with unwind_socket when ForSocketClient(args),
// with unwind_remote otherwise; same arguments. Returns 1 (after printing
// why) only if that fails.
int ExecServerClient(char** argv, absl::Span<const absl::string_view> args);

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
