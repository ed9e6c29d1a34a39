#include "proc/core_paths.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace unwindd::proc {
namespace {

using V = std::vector<std::string>;

TEST(CorePathsTest, ParsePathMapping) {
  absl::StatusOr<PathMapping> m = ParsePathMapping("/build/out/=/home/me/out");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->from, "/build/out");
  EXPECT_EQ(m->to, "/home/me/out");
  EXPECT_TRUE(absl::IsInvalidArgument(ParsePathMapping("nothing").status()));
  EXPECT_TRUE(absl::IsInvalidArgument(ParsePathMapping("=/x").status()));
  EXPECT_TRUE(absl::IsInvalidArgument(ParsePathMapping("/x=").status()));
}

TEST(CorePathsTest, NoOptionsIsThePathItself) {
  EXPECT_EQ(CandidatePaths({}, "/usr/lib/libc.so.6", false),
            V{"/usr/lib/libc.so.6"});
}

TEST(CorePathsTest, ExeOnlyForTheMainExecutable) {
  FileLookup l{.exe = "/tmp/app"};
  EXPECT_EQ(CandidatePaths(l, "/opt/app", true), (V{"/tmp/app", "/opt/app"}));
  EXPECT_EQ(CandidatePaths(l, "/lib/x.so", false), V{"/lib/x.so"});
}

TEST(CorePathsTest, PathMapsByWholeComponentsThenSysroot) {
  FileLookup l{.sysroot = "/sr/",
               .path_map = {{"/opt/app", "/home/a"}, {"/opt", "/mnt/opt"}}};
  EXPECT_EQ(CandidatePaths(l, "/opt/app/bin/x", false),
            (V{"/home/a/bin/x", "/mnt/opt/app/bin/x", "/sr/opt/app/bin/x"}));
  // /opt/app does not map /opt/application.
  EXPECT_EQ(CandidatePaths(l, "/opt/application", false),
            (V{"/mnt/opt/application", "/sr/opt/application"}));
  // With a sysroot the host's own file is never a candidate.
  EXPECT_EQ(CandidatePaths(l, "/lib/libc.so.6", false), V{"/sr/lib/libc.so.6"});
}

TEST(CorePathsTest, RootMappingAndRootSysroot) {
  FileLookup l{.sysroot = "/", .path_map = {{"/", "/chroot"}}};
  EXPECT_EQ(CandidatePaths(l, "/lib/a.so", false),
            (V{"/chroot/lib/a.so", "/lib/a.so"}));
}

TEST(CorePathsTest, BareSonamesSearchLibraryDirectories) {
  V c = CandidatePaths({.sysroot = "/sr"}, "libfoo.so.1", false);
  ASSERT_FALSE(c.empty());
  EXPECT_EQ(c[0], "/sr/lib/x86_64-linux-gnu/libfoo.so.1");
}

}  // namespace
}  // namespace unwindd::proc
