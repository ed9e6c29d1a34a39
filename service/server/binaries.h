// unwindd's side of "binaries from elsewhere" (docs/cores.md): its default debug
// directories, its debuginfod client (off unless started with
// --debuginfod=URL; $DEBUGINFOD_URLS is not enough), and the locate options
// one request gets from them.
//
//   ServerBinaries b = ...;   // from the flags, once
//   absl::StatusOr<locate::LocateOptions> o =
//       RequestLocateOptions(b, request.debug_dirs(), request.debuginfod(), sysroot);
//
// debuginfod's cache is unwindd's own: fetching, and opening what was
// fetched, run with unwindd's filesystem identity (ScopedOwnFsIdentity),
// while everything the caller names is opened as the caller. What may be
// fetched follows unwinder/locate/locator.h's privacy rule: only build-ids
// the request's own target names, never for a file the caller could not
// read locally.
#ifndef UNWINDD_SERVICE_SERVER_BINARIES_H_
#define UNWINDD_SERVICE_SERVER_BINARIES_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "google/protobuf/repeated_field.h"
#include "service/server/auth.h"
#include "unwinder/locate/debuginfod.h"
#include "unwinder/locate/locator.h"

namespace unwindd::service {

struct ServerBinaries {
  std::vector<std::string> debug_dirs = {"/usr/lib/debug"};
  // Null: no debuginfod (requests asking for it get FAILED_PRECONDITION).
  std::unique_ptr<locate::Debuginfod> debuginfod;
};

// The most debug directories a request may name.
inline constexpr int kMaxDebugDirs = 16;

// InvalidArgument for too many, relative, empty or overlong directories;
// FailedPrecondition for `debuginfod` on a server without one.
// Local lookups (debug directories, build-id directories, debuglinks) run
// with `caller`'s filesystem identity, fetching with unwindd's own.
absl::StatusOr<locate::LocateOptions> RequestLocateOptions(
    const ServerBinaries& binaries,
    const google::protobuf::RepeatedPtrField<std::string>& debug_dirs,
    bool debuginfod, const std::string& sysroot, const Caller& caller);

}  // namespace unwindd::service

#endif  // UNWINDD_SERVICE_SERVER_BINARIES_H_
