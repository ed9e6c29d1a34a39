// `unwind --server=ADDRESS ...`: the in-process CLI hands the whole command
// line to its sibling binary `unwind_remote`, which links gRPC. Keeping gRPC
// out of `unwind` keeps its start-up at about a millisecond (linking grpc++
// alone costs ~16 ms).
//
//   if (WantsServer(args)) return ExecRemote(argv);   // returns only on error
#ifndef UNWINDD_SERVICE_CLI_REMOTE_EXEC_H_
#define UNWINDD_SERVICE_CLI_REMOTE_EXEC_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace unwindd::service {

// True if the command line has --server=ADDRESS.
bool WantsServer(absl::Span<const absl::string_view> args);

// unwind_remote next to this executable (bazel-bin/service/), or in its
// runfiles.
absl::StatusOr<std::string> FindRemoteBinary();

// Replaces this process with unwind_remote, same arguments. Returns (1,
// after printing why) only if that fails.
int ExecRemote(char** argv);

}  // namespace unwindd::service

#endif  // UNWINDD_SERVICE_CLI_REMOTE_EXEC_H_
