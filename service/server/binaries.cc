#include "service/server/binaries.h"

#include <climits>

#include "absl/strings/str_cat.h"
#include "service/server/auth.h"

namespace unwindd::service {

absl::StatusOr<locate::LocateOptions> RequestLocateOptions(
    const ServerBinaries& binaries,
    const google::protobuf::RepeatedPtrField<std::string>& debug_dirs,
    bool debuginfod, const std::string& sysroot, const Caller& caller) {
  locate::LocateOptions o;
  o.sysroot = sysroot;
  if (debug_dirs.size() > kMaxDebugDirs) {
    return absl::InvalidArgumentError(
        absl::StrCat("more than ", kMaxDebugDirs, " debug_dirs"));
  }
  if (debug_dirs.empty()) {
    o.debug_dirs = binaries.debug_dirs;
  } else {
    o.debug_dirs.clear();
    for (const std::string& d : debug_dirs) {
      if (d.empty() || d[0] != '/' || d.size() > PATH_MAX) {
        return absl::InvalidArgumentError(
            absl::StrCat("debug_dirs entry '", d.substr(0, 64),
                         "' is not an absolute path of at most PATH_MAX bytes"));
      }
      o.debug_dirs.push_back(d);
    }
  }
  if (debuginfod) {
    if (binaries.debuginfod == nullptr) {
      return absl::FailedPreconditionError(
          "this unwindd has no debuginfod server configured (--debuginfod=URL)");
    }
    o.debuginfod = binaries.debuginfod.get();
  }
  o.as_self = [](const std::function<void()>& fn) {
    ScopedOwnFsIdentity self;
    fn();
  };
  // A caller whose identity cannot be taken gets no local lookups at all.
  o.as_caller = [caller](const std::function<void()>& fn) {
    ScopedFsIdentity as(caller);
    if (as.status().ok()) fn();
  };
  return o;
}

}  // namespace unwindd::service
