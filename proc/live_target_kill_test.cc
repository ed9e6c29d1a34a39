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
#include <thread>

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

// In a forked tracer: attach to `pid` while another thread SIGKILLs it
// after `kill_after_us` (< 0: after the attach), destroy the target, say so
// on `done`, and stay the tracer until killed.
[[noreturn]] void Tracer(pid_t pid, int kill_after_us, int done) {
  std::thread killer;
  if (kill_after_us >= 0) {
    killer = std::thread([pid, kill_after_us] {
      usleep(kill_after_us);
      kill(pid, SIGKILL);
    });
  }
  {
    absl::StatusOr<std::unique_ptr<Target>> t = AttachLive(pid, {});
    if (t.ok()) {
      if (kill_after_us < 0) kill(pid, SIGKILL);
      (void)(*t)->InitialRegisters((*t)->Threads().back());
    }
  }
  if (killer.joinable()) killer.join();
  (void)!write(done, "d", 1);
  for (;;) pause();
}

// Runs Tracer in a child process; false if destroying the target hung, or
// the target then could not be reaped by its parent (this test).
void KillAndCheck(int kill_after_us, int round) {
  testing::TestChild child;
  ASSERT_TRUE(child.ready());
  const pid_t pid = child.pid();
  int done[2];
  ASSERT_EQ(pipe(done), 0);
  pid_t tracer = fork();
  ASSERT_GE(tracer, 0);
  if (tracer == 0) Tracer(pid, kill_after_us, done[1]);
  close(done[1]);
  pollfd p{done[0], POLLIN, 0};
  bool detached = poll(&p, 1, 10000) == 1;
  close(done[0]);
  EXPECT_TRUE(detached) << "round " << round << ", kill after " << kill_after_us
                        << " us: the tracer hung";
  if (detached) {
    EXPECT_TRUE(ReapedWithin(pid, std::chrono::seconds(5)))
        << "round " << round << ": still attached to the tracer";
  }
  kill(tracer, SIGKILL);
  waitpid(tracer, nullptr, 0);
}

// Killed at varying moments while the threads are being seized and stopped:
// some stops collected, the leader's still pending.
TEST(LiveTargetKillTest, KilledWhileAttachingDoesNotHang) {
  if (geteuid() != 0) GTEST_SKIP() << "needs ptrace rights over a sibling";
  for (int round = 0; round < 40; ++round) KillAndCheck(round * 7, round);
}

TEST(LiveTargetKillTest, KilledWhileAttachedDetachesWithoutHanging) {
  if (geteuid() != 0) GTEST_SKIP() << "needs ptrace rights over a sibling";
  for (int round = 0; round < 3; ++round) KillAndCheck(-1, round);
}

}  // namespace
}  // namespace unwindd::proc
