// Test-only: a forked child process with known threads, for tests that
// ptrace a real process, plus /proc probes to check what the tracer did.
//
//   TestChild child;                       // main + 3 blocked threads
//   auto t = AttachLive(child.pid(), {});
//   ...
//   t->reset();
//   ExpectDetached(child.pid());
//   EXPECT_TRUE(child.Responds());         // it runs again
//
// One TestChild at a time per test process (its pipes are globals, so the
// child's thread functions can reach them).
#ifndef UNWINDD_PROC_TESTING_TEST_CHILD_H_
#define UNWINDD_PROC_TESTING_TEST_CHILD_H_

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace unwindd::proc::testing {

// The threads of a TestChild; they report their tids in any order.
enum Role : int32_t {
  kMain,    // answers each byte on the command pipe (Responds)
  kPause,   // blocked in pause()
  kSleep,   // blocked in nanosleep()
  kReader,  // blocked in read(); exits when ReleaseReader() feeds it a byte
  kNumRoles,
};

class TestChild {
 public:
  // With `main_thread_exits`, the main thread leaves (SYS_exit) after
  // starting the others, leaving a zombie leader and three live threads.
  explicit TestChild(bool main_thread_exits = false);
  ~TestChild();  // SIGKILL and reap
  TestChild(const TestChild&) = delete;
  TestChild& operator=(const TestChild&) = delete;

  pid_t pid() const { return pid_; }
  // Every thread that reported: the main thread only if it still runs.
  const std::vector<pid_t>& tids() const { return tids_; }
  pid_t tid(Role role) const { return by_role_[role]; }
  bool ready() const { return pid_ > 0 && tids_.size() >= 3; }

  // Round trip through the main thread: false within 5 s if it is stopped.
  bool Responds();
  // A byte written by the child's SIGUSR1 handler has arrived.
  bool HandledUsr1();
  // Lets the kReader thread's read() return, after which it exits.
  bool ReleaseReader();

 private:
  pid_t pid_ = -1;
  std::vector<pid_t> tids_;
  pid_t by_role_[kNumRoles] = {};
};

// /proc/PID/task/TID/stat's state letter, or 0 if the thread is gone.
char TaskState(pid_t pid, pid_t tid);
// Polls (for up to 5 s) until TaskState is one of `states`, or the thread
// is gone if `or_gone`.
bool WaitForTaskState(pid_t pid, pid_t tid, const std::string& states,
                      bool or_gone = false);
// TracerPid from /proc/PID/task/TID/status; -1 if unreadable.
int TracerPid(pid_t pid, pid_t tid);
// The file's contents, or "" if unreadable.
std::string ReadWholeFile(const std::string& path);
// gtest expectations: no task of `pid` is traced.
void ExpectDetached(pid_t pid);

}  // namespace unwindd::proc::testing

#endif  // UNWINDD_PROC_TESTING_TEST_CHILD_H_
