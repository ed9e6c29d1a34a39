// What proc/live_target.cc needs for the threads ptrace cannot stop in
// time (AttachOptions::stop_timeout): a timer that ends a blocking
// waitpid at the attach's deadline, the registers the kernel shows of a
// thread blocked in it, and the threads seized but never stopped
// ("orphans"), detached once they stop.
//
//   DeadlineTimer timer;
//   if (timer.Arm(deadline)) { ... waitpid returns EINTR at the deadline ... }
//   std::optional<BlockedRegisters> r = ParseSyscallFile(text);
//   AddOrphan(tid);           // in the destructor, for a thread still running
//   CollectOrphans();         // at the next attach on this thread
#ifndef UNWINDD_PROC_UNSTOPPED_THREADS_H_
#define UNWINDD_PROC_UNSTOPPED_THREADS_H_

#include <sys/types.h>
#include <time.h>

#include <array>
#include <cstdint>
#include <optional>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "arch/arch.h"

namespace unwindd::proc {

// A POSIX timer that sends a signal (`signal()`'s, asked when the timer is
// first set) to the thread that first sets it.
class ThreadTimer {
 public:
  explicit ThreadTimer(int (*signal)()) : signal_(signal) {}
  ThreadTimer(const ThreadTimer&) = delete;
  ThreadTimer& operator=(const ThreadTimer&) = delete;
  ~ThreadTimer();

  // Fires after `first`, then every `every`. False when no timer could be
  // made.
  bool Set(absl::Duration first, absl::Duration every);
  // Async-signal-safe.
  void Disarm();

 private:
  int (*const signal_)();
  timer_t timer_{};
  bool created_ = false;
};

// A timer on the calling thread that interrupts its blocking waitpid (a
// no-op real-time signal without SA_RESTART, so that the call returns
// EINTR) at a deadline, and every 10 ms after, so that a signal that lands
// just before waitpid blocks is not the last.
class DeadlineTimer {
 public:
  DeadlineTimer();

  // False when no timer could be made: the wait is then unbounded, as
  // without a timeout.
  bool Arm(absl::Time deadline);
  void Disarm() { timer_.Disarm(); }

 private:
  ThreadTimer timer_;
};

// What /proc/PID/task/TID/syscall shows of a thread blocked in the
// kernel (fs/proc/base.c proc_pid_syscall): "-1 SP PC" outside a system
// call, "NR ARG1 ... ARG6 SP PC" in one, "running" when it is not blocked.
struct BlockedRegisters {
  uint64_t pc = 0;
  uint64_t sp = 0;
  bool in_syscall = false;
  // The registers the system call's arguments were passed in, as the
  // thread entered the kernel (syscall_get_arguments reads them from the
  // saved user registers).
  std::array<uint64_t, 6> args{};
};

// nullopt for "running" or anything that is not one of the two forms.
std::optional<BlockedRegisters> ParseSyscallFile(absl::string_view text);

// The DWARF numbers of the registers system call arguments are passed in
// (syscall(2)): x86-64 rdi rsi rdx r10 r8 r9, i386 ebx ecx edx esi edi
// ebp, aarch64 x0-x5.
std::array<int, 6> SyscallArgumentRegisters(arch::Arch a);

// Threads a LiveTarget on this thread seized and could not stop, and so
// could not detach (the kernel detaches only a stopped tracee; the stop
// they have pending comes when they wake). Until this thread ends, which
// releases them, a timer signals it every 50 ms and the handler detaches
// each that has stopped since (or forgets one that exited), so that none
// stays stopped. For a long-lived caller (unwindd's threads); a process
// that exits soon after (the CLI) releases them all at once anyway.
// False when this thread holds kMaxOrphans already: the thread then stops
// when it wakes and stays stopped until this thread ends.
inline constexpr int kMaxOrphans = 256;
bool AddOrphan(pid_t tid);
// Detaches those that stopped, forgets those that exited, now.
void CollectOrphans();

}  // namespace unwindd::proc

#endif  // UNWINDD_PROC_UNSTOPPED_THREADS_H_
