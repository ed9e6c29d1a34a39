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
  // With a sysroot the host's own file is never a candidate; a library is
  // also tried at its merged-/usr twin and by name in the library
  // directories.
  V c = CandidatePaths(l, "/lib64/ld-linux-x86-64.so.2", false);
  ASSERT_GE(c.size(), 3u);
  EXPECT_EQ(c[0], "/sr/lib64/ld-linux-x86-64.so.2");
  EXPECT_EQ(c[1], "/sr/usr/lib64/ld-linux-x86-64.so.2");
  EXPECT_EQ(c[2], "/sr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2");
  for (const std::string& p : c) EXPECT_TRUE(p.rfind("/sr/", 0) == 0) << p;
  EXPECT_EQ(CandidatePaths(l, "/usr/bin/app", false),
            (V{"/sr/usr/bin/app", "/sr/bin/app"}));
}

TEST(CorePathsTest, RootMappingAndRootSysroot) {
  FileLookup l{.sysroot = "/", .path_map = {{"/", "/chroot"}}};
  V c = CandidatePaths(l, "/lib/a.so", false);
  ASSERT_GE(c.size(), 3u);
  EXPECT_EQ(c[0], "/chroot/lib/a.so");
  EXPECT_EQ(c[1], "/lib/a.so");
  EXPECT_EQ(c[2], "/usr/lib/a.so");
}

TEST(CorePathsTest, BareSonamesSearchLibraryDirectories) {
  V c = CandidatePaths({.sysroot = "/sr"}, "libfoo.so.1", false);
  ASSERT_FALSE(c.empty());
  EXPECT_EQ(c[0], "/sr/lib/x86_64-linux-gnu/libfoo.so.1");
}

}  // namespace
}  // namespace unwindd::proc
