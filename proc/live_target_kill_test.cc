// A process killed while another process holds it attached: destroying the
// target must not hang, and must leave no zombie attached to the tracer, so
// the process's parent can reap it. (A traced group leader's exit is
// reported only after every other thread is reaped; detaching in tid order
// used to wait for the leader first, forever — found by the unwindd load
// benchmark.) The tracer is a forked process, as unwindd is not the parent
// of what it unwinds, and it stays alive afterwards: a tracer's exit
// releases its tracees, which would hide the bug.
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <memory>

#include "gtest/gtest.h"
#include "proc/live_target.h"
#include "proc/testing/test_child.h"

namespace unwindd::proc {
namespace {

bool ReapedWithin(pid_t pid, std::chrono::seconds limit) {
  auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    int status;
    if (waitpid(pid, &status, WNOHANG) == pid) return true;
    usleep(1000);
  }
  return false;
}

TEST(LiveTargetKillTest, KilledWhileAttachedDetachesWithoutHanging) {
  if (geteuid() != 0) GTEST_SKIP() << "needs ptrace rights over a sibling";
  for (int round = 0; round < 3; ++round) {
    testing::TestChild child;
    ASSERT_TRUE(child.ready());
    const pid_t pid = child.pid();
    int done[2];
    ASSERT_EQ(pipe(done), 0);
    pid_t tracer = fork();
    ASSERT_GE(tracer, 0);
    if (tracer == 0) {
      absl::StatusOr<std::unique_ptr<Target>> t = AttachLive(pid, {});
      if (!t.ok()) _exit(2);
      kill(pid, SIGKILL);
      (void)(*t)->InitialRegisters((*t)->Threads().back());
      t->reset();
      (void)!write(done[1], "d", 1);
      pause();  // stay the tracer until killed
      _exit(0);
    }
    close(done[1]);
    pollfd p{done[0], POLLIN, 0};
    bool detached = poll(&p, 1, 10000) == 1;
    close(done[0]);
    EXPECT_TRUE(detached) << "round " << round << ": destroying the target hung";
    if (detached) {
      EXPECT_TRUE(ReapedWithin(pid, std::chrono::seconds(5)))
          << "round " << round << ": still attached to the tracer";
    }
    kill(tracer, SIGKILL);
    waitpid(tracer, nullptr, 0);
  }
}

}  // namespace
}  // namespace unwindd::proc
