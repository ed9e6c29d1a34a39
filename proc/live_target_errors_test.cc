// AttachLive's refusals: each with its canonical code and a message that
// names the process.
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "proc/live_target.h"
#include "proc/target.h"
#include "proc/testing/test_child.h"

namespace unwindd::proc {
namespace {

using testing::ExpectDetached;
using testing::TestChild;
using testing::TracerPid;

TEST(LiveTargetErrorsTest, NoSuchProcess) {
  // pid_max is at most 2^22, so no process has pid INT_MAX.
  absl::StatusOr<std::unique_ptr<Target>> t = AttachLive(INT_MAX, {});
  ASSERT_EQ(t.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(t.status().message(), "no such process 2147483647");
}

TEST(LiveTargetErrorsTest, OwnProcess) {
  EXPECT_EQ(AttachLive(getpid(), {}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(LiveTargetErrorsTest, ThreadNotInProcess) {
  TestChild child;
  ASSERT_TRUE(child.ready());
  absl::StatusOr<std::unique_ptr<Target>> t =
      AttachLive(child.pid(), {getpid()});
  ASSERT_EQ(t.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(t.status().message(), "thread " + std::to_string(getpid()) +
                                      " is not in process " +
                                      std::to_string(child.pid()));
  ExpectDetached(child.pid());
}

TEST(LiveTargetErrorsTest, NonLeaderThreadAsPid) {
  TestChild child;
  ASSERT_TRUE(child.ready());
  absl::StatusOr<std::unique_ptr<Target>> t =
      AttachLive(child.tid(testing::kPause), {});
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument)
      << t.status();
}

TEST(LiveTargetErrorsTest, SecondAttachIsPermissionDenied) {
  TestChild child;
  ASSERT_TRUE(child.ready());
  absl::StatusOr<std::unique_ptr<Target>> first = AttachLive(child.pid(), {});
  ASSERT_TRUE(first.ok()) << first.status();
  absl::StatusOr<std::unique_ptr<Target>> second = AttachLive(child.pid(), {});
  ASSERT_EQ(second.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(
      absl::StrContains(second.status().message(),
                        "already traced by PID " + std::to_string(getpid())))
      << second.status();
  // The failed attempt must not have disturbed the first.
  for (pid_t tid : (*first)->Threads()) {
    EXPECT_TRUE((*first)->InitialRegisters(tid).ok()) << tid;
    EXPECT_EQ(TracerPid(child.pid(), tid), getpid());
  }
  first->reset();
  ExpectDetached(child.pid());
  EXPECT_TRUE(child.Responds());
}

TEST(LiveTargetErrorsTest, KernelThread) {
  if (!absl::StrContains(testing::ReadWholeFile("/proc/2/stat"),
                         "(kthreadd)")) {
    GTEST_SKIP() << "pid 2 is not kthreadd here (pid namespace?)";
  }
  absl::StatusOr<std::unique_ptr<Target>> t = AttachLive(2, {});
  ASSERT_EQ(t.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(t.status().message(), "process 2 is a kernel thread");
}

TEST(LiveTargetErrorsTest, Zombie) {
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) _exit(0);
  ASSERT_TRUE(testing::WaitForTaskState(pid, pid, "Z"));
  absl::StatusOr<std::unique_ptr<Target>> t = AttachLive(pid, {});
  EXPECT_EQ(t.status().code(), absl::StatusCode::kFailedPrecondition)
      << t.status();
  EXPECT_EQ(t.status().message(),
            "process " + std::to_string(pid) + " is a zombie");
  int status;
  EXPECT_EQ(waitpid(pid, &status, 0), pid);
}

}  // namespace
}  // namespace unwindd::proc
