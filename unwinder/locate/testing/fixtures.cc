#include "unwinder/locate/testing/fixtures.h"

#include "absl/strings/str_cat.h"
#include "testdata/harness/tools.h"

namespace unwindd::locate::testing {

std::string VariantPath(const std::string& kind, const std::string& name) {
  return absl::StrCat(harness::RunfilesRoot(), "/testdata/debuginfo/", kind, "/", name);
}

std::string BasePath(const std::string& name) {
  if (name == kThreads) return harness::FixturePath(name);
  return absl::StrCat(harness::RunfilesRoot(), "/testdata/debuginfo/", name);
}

}  // namespace unwindd::locate::testing
