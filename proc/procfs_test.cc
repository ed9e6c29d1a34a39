#include "proc/procfs.h"

#include <errno.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace unwindd::proc {
namespace {

TEST(ProcfsTest, Paths) {
  EXPECT_EQ(ProcPath(12, "maps"), "/proc/12/maps");
  EXPECT_EQ(TaskPath(12, 13, "stat"), "/proc/12/task/13/stat");
}

TEST(ProcfsTest, ErrnoMapping) {
  EXPECT_EQ(ProcError(ENOENT, 7, "/proc/7/maps").code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(ProcError(ESRCH, 7, "/proc/7/maps").message(), "no such process 7");
  EXPECT_EQ(ProcError(EACCES, 7, "/proc/7/maps").code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(ProcError(EPERM, 7, "/proc/7/maps").code(),
            absl::StatusCode::kPermissionDenied);
}

TEST(ProcfsTest, Self) {
  const pid_t pid = getpid();
  absl::StatusOr<std::vector<pid_t>> tasks = ListTasks(pid);
  ASSERT_TRUE(tasks.ok()) << tasks.status();
  EXPECT_TRUE(std::is_sorted(tasks->begin(), tasks->end()));
  EXPECT_TRUE(std::count(tasks->begin(), tasks->end(), gettid()));

  absl::StatusOr<ProcStat> st = ReadStat(pid, gettid());
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ(st->state, 'R');

  absl::StatusOr<int64_t> tgid = ReadStatusField(pid, gettid(), "Tgid");
  ASSERT_TRUE(tgid.ok()) << tgid.status();
  EXPECT_EQ(*tgid, pid);
  EXPECT_EQ(ReadStatusField(pid, pid, "NoSuchKey").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_FALSE(ThreadExited(pid, gettid()));
}

TEST(ProcfsTest, ReadProcFileLimit) {
  absl::StatusOr<std::string> s =
      ReadProcFile(getpid(), ProcPath(getpid(), "maps"), 10);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kResourceExhausted);
}

TEST(ProcfsTest, NoSuchProcess) {
  EXPECT_EQ(ListTasks(INT_MAX).status().code(), absl::StatusCode::kNotFound);
  absl::StatusOr<ProcStat> st = ReadStat(INT_MAX, INT_MAX);
  EXPECT_EQ(st.status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(absl::StrContains(st.status().message(), "2147483647"));
  EXPECT_TRUE(ThreadExited(INT_MAX, INT_MAX));
}

}  // namespace
}  // namespace unwindd::proc
