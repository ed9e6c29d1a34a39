#include "proc/unstopped_threads.h"

#include <pthread.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"

namespace unwindd::proc {
namespace {

// Installs `handler` for SIGRTMIN + `offset` (real-time signals no
// library of ours uses) and returns the signal's number.
int InstallRealtimeHandler(int offset, void (*handler)(int), int flags) {
  const int sig = SIGRTMIN + offset;
  struct sigaction sa = {};
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = flags;
  sigaction(sig, &sa, nullptr);
  return sig;
}

// The signal that interrupts a blocking waitpid() at the attach's
// deadline (AttachOptions::stop_timeout): a handler that does nothing and
// no SA_RESTART, so that waitpid returns EINTR. Installed the first time
// a timeout is used.
int WakeSignal() {
  static const int sig = InstallRealtimeHandler(6, [](int) {}, 0);
  return sig;
}

// AddOrphan's list, one per thread (unstopped_threads.h). Only this thread
// and its signal handler touch it, the thread with the signal blocked.
class Orphans {
 public:
  static constexpr int kMax = kMaxOrphans;

  // Adds `tid` (interrupted, not stopped), starting the timer. False when
  // full: the thread then stops when it wakes and stays stopped until
  // this thread ends.
  bool Add(pid_t tid) {
    Blocked blocked;
    if (count_ == kMax) return false;
    tids_[count_++] = tid;
    Arm();
    return true;
  }

  // Collect(), from the thread itself.
  void CollectNow() {
    Blocked blocked;
    Collect();
  }

  // Detaches those that stopped, forgets those that exited. Async-signal-
  // safe (waitpid, ptrace, timer_settime).
  void Collect() {
    int kept = 0;
    for (int i = 0; i < count_; ++i) {
      const pid_t tid = tids_[i];
      int status = 0;
      const pid_t r = waitpid(tid, &status, WNOHANG | __WALL);
      if (r == 0 || (r < 0 && errno == EINTR)) {
        tids_[kept++] = tid;  // still asleep
      } else if (r == tid && WIFSTOPPED(status)) {
        // Our interrupt, or a signal that arrived first: pass that on.
        const uintptr_t sig = (status >> 16) == 0 ? WSTOPSIG(status) : 0;
        ptrace(PTRACE_DETACH, tid, nullptr, reinterpret_cast<void*>(sig));
      }
      // Else exited (reaped now), or not ours any more (ECHILD).
    }
    count_ = kept;
    if (count_ == 0 && armed_) {
      timer_.Disarm();
      armed_ = false;
    }
  }

  static Orphans& OfThisThread();
  static int Signal();

 private:
  // Blocks the janitor's signal while the thread itself changes the list.
  struct Blocked {
    sigset_t old;
    Blocked() {
      sigset_t set;
      sigemptyset(&set);
      sigaddset(&set, Signal());
      pthread_sigmask(SIG_BLOCK, &set, &old);
    }
    ~Blocked() { pthread_sigmask(SIG_SETMASK, &old, nullptr); }
  };

  void Arm() {
    if (!armed_) armed_ = timer_.Set(absl::Milliseconds(50), absl::Milliseconds(50));
  }

  pid_t tids_[kMax] = {};
  int count_ = 0;
  ThreadTimer timer_{&Orphans::Signal};
  bool armed_ = false;
};

// Allocated once per thread that ever orphans a thread; never freed: a
// timer that outlives the thread is harmless (it signals no one). A
// pointer, constant-initialized, so that the handler's access is a load.
thread_local Orphans* t_orphans = nullptr;

Orphans& Orphans::OfThisThread() {
  if (t_orphans == nullptr) t_orphans = new Orphans;
  return *t_orphans;
}

int Orphans::Signal() {
  // With SA_RESTART: the system calls it interrupts go on.
  static const int sig = InstallRealtimeHandler(
      7,
      [](int) {
        const int saved = errno;
        if (t_orphans != nullptr) t_orphans->Collect();
        errno = saved;
      },
      SA_RESTART);
  return sig;
}

}  // namespace

ThreadTimer::~ThreadTimer() {
  if (created_) timer_delete(timer_);
}

bool ThreadTimer::Set(absl::Duration first, absl::Duration every) {
  if (!created_) {
    struct sigevent sev = {};
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = signal_();
    sev._sigev_un._tid = gettid();
    if (timer_create(CLOCK_MONOTONIC, &sev, &timer_) != 0) return false;
    created_ = true;
  }
  struct itimerspec when = {};
  when.it_value = absl::ToTimespec(first);
  when.it_interval = absl::ToTimespec(every);
  return timer_settime(timer_, 0, &when, nullptr) == 0;
}

void ThreadTimer::Disarm() {
  if (!created_) return;
  struct itimerspec off = {};
  timer_settime(timer_, 0, &off, nullptr);
}

DeadlineTimer::DeadlineTimer() : timer_(&WakeSignal) {}

bool DeadlineTimer::Arm(absl::Time deadline) {
  // it_value 0 would disarm: a deadline already past fires at once.
  return timer_.Set(std::max(deadline - absl::Now(), absl::Nanoseconds(1)),
                    absl::Milliseconds(10));
}

std::optional<BlockedRegisters> ParseSyscallFile(absl::string_view text) {
  std::vector<absl::string_view> words =
      absl::StrSplit(absl::StripAsciiWhitespace(text), ' ', absl::SkipEmpty());
  if (words.size() != 3 && words.size() != 9) return std::nullopt;
  auto hex = [](absl::string_view w, uint64_t* v) {
    return absl::ConsumePrefix(&w, "0x") && absl::SimpleHexAtoi(w, v);
  };
  BlockedRegisters r;
  if (!hex(words[words.size() - 2], &r.sp) || !hex(words.back(), &r.pc)) return std::nullopt;
  r.in_syscall = words.size() == 9;
  for (size_t i = 0; r.in_syscall && i < r.args.size(); ++i) {
    if (!hex(words[i + 1], &r.args[i])) return std::nullopt;
  }
  return r;
}

std::array<int, 6> SyscallArgumentRegisters(arch::Arch a) {
  switch (a) {
    case arch::Arch::kX86_64:
      return {5, 4, 1, 10, 8, 9};
    case arch::Arch::kX86:
      return {3, 1, 2, 6, 7, 5};
    case arch::Arch::kAArch64:
      return {0, 1, 2, 3, 4, 5};
  }
  return {-1, -1, -1, -1, -1, -1};
}

bool AddOrphan(pid_t tid) { return Orphans::OfThisThread().Add(tid); }

void CollectOrphans() {
  if (t_orphans != nullptr) t_orphans->CollectNow();
}

}  // namespace unwindd::proc
