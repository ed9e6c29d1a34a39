#include "proc/maps.h"

#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace unwindd::proc {
namespace {

// Lines as a 6.x kernel prints them (fs/proc/task_mmu.c show_map_vma).
constexpr char kSample[] =
    "55d4c6a00000-55d4c6a28000 r--p 00000000 fd:01 1835032                    "
    "/usr/bin/bash\n"
    "55d4c6a28000-55d4c6b1e000 r-xp 00028000 fd:01 1835032                    "
    "/usr/bin/bash\n"
    "55d4c7c4a000-55d4c7dd3000 rw-p 00000000 00:00 0                          "
    "[heap]\n"
    "7f1c2a400000-7f1c2a428000 r--p 00000000 fd:01 1845300                    "
    "/opt/my app/lib/libfoo 2.so\n"
    "7f1c2a600000-7f1c2a601000 r-xp 00001000 08:02 99                         "
    "/tmp/old lib.so (deleted)\n"
    "7f1c2a700000-7f1c2a702000 rw-s 00000000 00:01 4242                       "
    "/memfd:jit (deleted)\n"
    "7f1c2a800000-7f1c2a900000 rw-p 00000000 00:00 0 \n"
    "7f1c2a900000-7f1c2a901000 ---p 00000000 00:00 0\n"
    "7ffd3c5e0000-7ffd3c601000 rw-p 00000000 00:00 0                          "
    "[stack]\n"
    "7ffd3c7f4000-7ffd3c7f8000 r--p 00000000 00:00 0                          "
    "[vvar]\n"
    "7ffd3c7f8000-7ffd3c7fa000 r-xp 00000000 00:00 0                          "
    "[vdso]\n"
    "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  "
    "[vsyscall]\n";

TEST(ParseMapsTest, Sample) {
  absl::StatusOr<std::vector<Mapping>> maps = ParseMaps(kSample);
  ASSERT_TRUE(maps.ok()) << maps.status();
  ASSERT_EQ(maps->size(), 12u);
  const std::vector<Mapping>& m = *maps;

  EXPECT_EQ(m[0].start, 0x55d4c6a00000u);
  EXPECT_EQ(m[0].end, 0x55d4c6a28000u);
  EXPECT_TRUE(m[0].read);
  EXPECT_FALSE(m[0].write);
  EXPECT_FALSE(m[0].exec);
  EXPECT_FALSE(m[0].shared);
  EXPECT_EQ(m[0].dev_major, 0xfdu);
  EXPECT_EQ(m[0].dev_minor, 1u);
  EXPECT_EQ(m[0].inode, 1835032u);
  EXPECT_EQ(m[0].path, "/usr/bin/bash");
  EXPECT_TRUE(m[0].IsFileBacked());
  EXPECT_FALSE(m[0].deleted);

  EXPECT_TRUE(m[1].exec);
  EXPECT_EQ(m[1].offset, 0x28000u);

  EXPECT_EQ(m[2].path, "[heap]");
  EXPECT_TRUE(m[2].IsSpecial());
  EXPECT_FALSE(m[2].IsFileBacked());

  EXPECT_EQ(m[3].path, "/opt/my app/lib/libfoo 2.so");

  EXPECT_EQ(m[4].path, "/tmp/old lib.so");
  EXPECT_TRUE(m[4].deleted);
  EXPECT_EQ(m[4].dev_major, 8u);
  EXPECT_EQ(m[4].dev_minor, 2u);

  EXPECT_EQ(m[5].path, "/memfd:jit");
  EXPECT_TRUE(m[5].deleted);
  EXPECT_TRUE(m[5].shared);

  // Anonymous, with (older kernels) and without a trailing space.
  EXPECT_EQ(m[6].path, "");
  EXPECT_FALSE(m[6].IsFileBacked());
  EXPECT_FALSE(m[6].IsSpecial());
  EXPECT_EQ(m[7].path, "");
  EXPECT_FALSE(m[7].read);

  EXPECT_EQ(m[8].path, "[stack]");
  EXPECT_EQ(m[9].path, "[vvar]");
  EXPECT_EQ(m[10].path, "[vdso]");
  EXPECT_TRUE(m[10].IsSpecial());
  EXPECT_TRUE(m[10].Contains(0x7ffd3c7f8000));
  EXPECT_FALSE(m[10].Contains(0x7ffd3c7fa000));
  EXPECT_EQ(m[11].start, 0xffffffffff600000u);
}

TEST(ParseMapsTest, EmptyText) {
  absl::StatusOr<std::vector<Mapping>> maps = ParseMaps("");
  ASSERT_TRUE(maps.ok());
  EXPECT_TRUE(maps->empty());
}

TEST(ParseMapsTest, NoFinalNewline) {
  absl::StatusOr<std::vector<Mapping>> maps =
      ParseMaps("1000-2000 r-xp 00000000 08:01 5 /bin/x");
  ASSERT_TRUE(maps.ok()) << maps.status();
  ASSERT_EQ(maps->size(), 1u);
  EXPECT_EQ((*maps)[0].path, "/bin/x");
}

void ExpectDataLossOnLine(const std::string& text, int line) {
  absl::StatusOr<std::vector<Mapping>> maps = ParseMaps(text);
  ASSERT_FALSE(maps.ok()) << text;
  EXPECT_EQ(maps.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_TRUE(absl::StrContains(maps.status().message(),
                                "line " + std::to_string(line)))
      << maps.status();
}

TEST(ParseMapsTest, MalformedLinesAreDataLossNamingTheLine) {
  const std::string good = "1000-2000 r-xp 00000000 08:01 5 /bin/x\n";
  ExpectDataLossOnLine(good + "1000-2000 r-xp 00000000 08:01\n", 2);
  ExpectDataLossOnLine(good + good + "1000-2000 r-xp\n", 3);
  ExpectDataLossOnLine("1000-2000\n", 1);
  ExpectDataLossOnLine("garbage\n", 1);
  ExpectDataLossOnLine("1000 r-xp 00000000 08:01 5\n", 1);
  ExpectDataLossOnLine("2000-1000 r-xp 00000000 08:01 5\n", 1);
  ExpectDataLossOnLine("1000-2000 rwxq 00000000 08:01 5\n", 1);
  ExpectDataLossOnLine("1000-2000 r-x 00000000 08:01 5\n", 1);
  ExpectDataLossOnLine("1000-2000 r-xp 0x0 08:01 5\n", 1);
  ExpectDataLossOnLine("1000-2000 r-xp 00000000 0801 5\n", 1);
  ExpectDataLossOnLine("1000-2000 r-xp 00000000 08:01 -5\n", 1);
  ExpectDataLossOnLine("1000-2000 r-xp 00000000 08:01 x\n", 1);
  ExpectDataLossOnLine("1-10000000000000000 r-xp 00000000 08:01 5\n", 1);
}

TEST(ReadMapsTest, Self) {
  absl::StatusOr<std::vector<Mapping>> maps = ReadMaps(getpid());
  ASSERT_TRUE(maps.ok()) << maps.status();
  ASSERT_FALSE(maps->empty());
  // Our own code and stack must be in there.
  const uint64_t code = reinterpret_cast<uintptr_t>(&ParseMaps);
  int local = 0;
  const uint64_t stack = reinterpret_cast<uintptr_t>(&local);
  bool found_code = false, found_stack = false;
  uint64_t prev_end = 0;
  for (const Mapping& m : *maps) {
    EXPECT_LE(prev_end, m.start) << "sorted, not overlapping";
    prev_end = m.end;
    if (m.Contains(code)) {
      found_code = true;
      EXPECT_TRUE(m.exec);
      EXPECT_TRUE(m.IsFileBacked());
    }
    if (m.Contains(stack)) {
      found_stack = true;
      EXPECT_EQ(m.path, "[stack]");
    }
  }
  EXPECT_TRUE(found_code);
  EXPECT_TRUE(found_stack);
}

TEST(ReadMapsTest, NoSuchProcess) {
  absl::StatusOr<std::vector<Mapping>> maps = ReadMaps(INT_MAX);
  ASSERT_FALSE(maps.ok());
  EXPECT_EQ(maps.status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(absl::StrContains(maps.status().message(), "2147483647"));
}

TEST(ReadMapsTest, PermissionDeniedForAnotherUsersProcess) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to switch to nobody";
  const pid_t parent = getpid();
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // As nobody, root's maps are off limits (PTRACE_MODE_READ fails).
    if (setresgid(65534, 65534, 65534) != 0 ||
        setresuid(65534, 65534, 65534) != 0) {
      _exit(100);
    }
    absl::StatusOr<std::vector<Mapping>> maps = ReadMaps(parent);
    _exit(maps.ok() ? 101 : static_cast<int>(maps.status().code()));
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status),
            static_cast<int>(absl::StatusCode::kPermissionDenied));
}

}  // namespace
}  // namespace unwindd::proc
