// The version of unwindd's programs and the commit they were built from,
// for `unwind --version` and `unwindd --version`. The version is the
// project's VERSION file; the commit comes from Bazel's workspace status
// (tools/workspace_status.sh): a git commit, "-dirty" when the checkout
// had uncommitted changes, or "unknown" outside a git checkout.
//
//   std::puts(VersionLine("unwind").c_str());  // "unwind 0.1.0 (commit 587d9d5...)"
#ifndef UNWINDD_SERVICE_COMMON_VERSION_H_
#define UNWINDD_SERVICE_COMMON_VERSION_H_

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace unwindd::service {

extern const char kVersion[];      // "0.1.0"
extern const char kBuildCommit[];  // 40 hex digits [+ "-dirty"], or "unknown"

inline std::string VersionLine(absl::string_view program) {
  return absl::StrCat(program, " ", kVersion, " (commit ", kBuildCommit, ")");
}

}  // namespace unwindd::service

#endif  // UNWINDD_SERVICE_COMMON_VERSION_H_
