// PidTracker against real processes: children of this test that live,
// exit and are reaped, and wrong start times for a live one.
#include "service/server/pid_identity.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace unwindd::service {
namespace {

// A child that waits to be killed.
class Child {
 public:
  Child() : pid_(fork()) {
    if (pid_ == 0) {
      while (true) pause();
    }
  }
  ~Child() { Reap(); }
  pid_t pid() const { return pid_; }
  // Kills and reaps it: its pid may then be reused.
  void Reap() {
    if (reaped_) return;
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    reaped_ = true;
  }

 private:
  const pid_t pid_;
  bool reaped_ = false;
};

TEST(ReadProcessStartTimeTest, AChildStartsNoEarlierThanItsParent) {
  absl::StatusOr<uint64_t> self = ReadProcessStartTime(getpid());
  ASSERT_TRUE(self.ok()) << self.status();
  Child child;
  ASSERT_GT(child.pid(), 0);
  absl::StatusOr<uint64_t> start = ReadProcessStartTime(child.pid());
  ASSERT_TRUE(start.ok()) << start.status();
  EXPECT_GE(*start, *self);
  EXPECT_GT(*start, 0u);
}

TEST(ReadProcessStartTimeTest, AReapedProcessIsNotFound) {
  Child child;
  child.Reap();
  EXPECT_EQ(ReadProcessStartTime(child.pid()).status().code(),
            absl::StatusCode::kNotFound);
}

TEST(PidTrackerTest, LiveOnlyWithItsOwnStartTime) {
  Child child;
  absl::StatusOr<uint64_t> start = ReadProcessStartTime(child.pid());
  ASSERT_TRUE(start.ok());
  PidTracker pids;
  PidTracker::Check c = pids.Identify(child.pid(), *start);
  EXPECT_TRUE(c.live) << c.reason;
  EXPECT_EQ(c.reason, "");
  EXPECT_TRUE(pids.Identify(child.pid(), 0).live);
  // Another process's start time: the pid is not the sampled process.
  c = pids.Identify(child.pid(), *start + 1);
  EXPECT_FALSE(c.live);
  EXPECT_NE(c.reason.find("reused"), std::string::npos) << c.reason;
  EXPECT_TRUE(pids.StillThere(child.pid()));
}

TEST(PidTrackerTest, AnExitedProcessIsNotLive) {
  Child child;
  absl::StatusOr<uint64_t> start = ReadProcessStartTime(child.pid());
  ASSERT_TRUE(start.ok());
  child.Reap();
  PidTracker pids;
  for (uint64_t s : {*start, uint64_t{0}}) {
    PidTracker::Check c = pids.Identify(child.pid(), s);
    EXPECT_FALSE(c.live);
    EXPECT_NE(c.reason.find("has exited"), std::string::npos) << c.reason;
  }
  EXPECT_FALSE(pids.StillThere(child.pid()));
}

// Found live, then gone: StillThere says the last read may not have been
// its, and the pid stays not live.
TEST(PidTrackerTest, ExitAfterTheCheck) {
  Child child;
  PidTracker pids;
  ASSERT_TRUE(pids.Identify(child.pid(), 0).live);
  child.Reap();
  EXPECT_FALSE(pids.StillThere(child.pid()));
  PidTracker::Check c = pids.Identify(child.pid(), 0);
  EXPECT_FALSE(c.live);
  EXPECT_NE(c.reason.find("exited"), std::string::npos) << c.reason;
}

// A zombie still holds its pid (nobody else can have it), so it is still
// "there"; it has no memory to read either.
TEST(PidTrackerTest, AZombieStillHoldsItsPid) {
  Child child;
  PidTracker pids;
  ASSERT_TRUE(pids.Identify(child.pid(), 0).live);
  kill(child.pid(), SIGKILL);
  siginfo_t info;
  ASSERT_EQ(waitid(P_PID, child.pid(), &info, WEXITED | WNOWAIT), 0);
  EXPECT_TRUE(pids.StillThere(child.pid()));
}

TEST(PidTrackerTest, ManyPidsStayBounded) {
  PidTracker pids;
  std::vector<std::unique_ptr<Child>> children;
  for (size_t i = 0; i < PidTracker::kMaxOpenPids + 3; ++i) {
    children.push_back(std::make_unique<Child>());
    ASSERT_TRUE(pids.Identify(children.back()->pid(), 0).live);
  }
  // The first ones' pidfds were closed; they are opened again when needed.
  for (const auto& c : children) EXPECT_TRUE(pids.Identify(c->pid(), 0).live);
}

}  // namespace
}  // namespace unwindd::service
