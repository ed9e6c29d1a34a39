// Tells ThreadSanitizer about Abseil's synchronization, which it cannot see:
// Debian's libabsl_synchronization is built with gcc and no TSan, so every
// absl::Mutex hand-off is invisible to it, and each access to data guarded
// by an absl::Mutex (ours and gRPC's) would be reported as a race.
//
// Linked into every binary of --config=tsan (.bazelrc: --custom_malloc,
// which adds one library to every link; this one defines no malloc). It
// defines the exported absl::Mutex, CondVar and Notification entry points
// under their own mangled names, so the dynamic linker binds every caller —
// our code, gRPC, and Abseil's own calls through its PLT — to these; each
// calls the real one (dlsym RTLD_NEXT) and adds the happens-before edge it
// implies: a release on the mutex's address before every unlock (and before
// blocking in a wait), an acquire after every lock.
//
// Conditions (Mutex::Await, LockWhen and their timed forms) are the one
// thing annotations around a call cannot fix: Abseil evaluates them inside
// the library, while it holds the mutex — on the waiting thread, or on
// whichever thread unlocks — so the condition's reads of guarded data would
// sit between two invisible hand-offs. Here the condition never reaches
// Abseil: the waiter evaluates it itself with the (annotated) mutex held,
// and between evaluations unlocks, sleeps 50 us and locks again. Slower
// than Abseil's wake-ups, the same semantics, only in the tsan build.
//
// Reader locks release and acquire the same address as writer locks, which
// also orders readers among themselves: a race between two readers that
// write under a shared lock would go unseen. Nothing here does that.
//
// Only the tsan config builds this file (tags = ["manual"]).
#include <dlfcn.h>
#include <sanitizer/tsan_interface.h>

#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace {

// absl::Duration and absl::Time, passed by value (two integer registers,
// as the real ones are: int64 + uint32, trivially copyable).
struct Duration {
  int64_t hi;
  uint32_t lo;
};

template <typename F>
F Real(const char* name) {
  void* f = dlsym(RTLD_NEXT, name);
  if (f == nullptr) {
    std::fprintf(stderr, "absl_sync_annotations: %s not found\n", name);
    std::abort();
  }
  return reinterpret_cast<F>(f);
}

// absl::Notification { Mutex mutex_; std::atomic<bool> notified_yet_; }:
// HasBeenNotified() is inline, an atomic acquire-load of notified_yet_ in
// our (instrumented) code, so Notify releases that address too.
constexpr uintptr_t kNotifiedYetOffset = sizeof(void*);  // sizeof(Mutex)

}  // namespace

#define UNWINDD_WRAP(ret, name, mangled, params, args, before, after) \
  extern "C" ret name params __asm__(mangled);                        \
  extern "C" __attribute__((weak)) ret name params {                  \
    static const auto real = Real<ret(*) params>(mangled);            \
    before;                                                           \
    ret r = real args;                                                \
    after;                                                            \
    return r;                                                         \
  }
#define UNWINDD_WRAP_VOID(name, mangled, params, args, before, after) \
  extern "C" void name params __asm__(mangled);                       \
  extern "C" __attribute__((weak)) void name params {                 \
    static const auto real = Real<void(*) params>(mangled);           \
    before;                                                           \
    real args;                                                        \
    after;                                                            \
  }

// Mutex.
UNWINDD_WRAP_VOID(MutexLock, "_ZN4absl7debian35Mutex4LockEv", (void* m), (m),
                  (void)0, __tsan_acquire(m))
UNWINDD_WRAP_VOID(MutexReaderLock, "_ZN4absl7debian35Mutex10ReaderLockEv",
                  (void* m), (m), (void)0, __tsan_acquire(m))
UNWINDD_WRAP_VOID(MutexUnlock, "_ZN4absl7debian35Mutex6UnlockEv", (void* m),
                  (m), __tsan_release(m), (void)0)
UNWINDD_WRAP_VOID(MutexReaderUnlock, "_ZN4absl7debian35Mutex12ReaderUnlockEv",
                  (void* m), (m), __tsan_release(m), (void)0)
UNWINDD_WRAP(bool, MutexTryLock, "_ZN4absl7debian35Mutex7TryLockEv",
             (void* m), (m), (void)0, if (r) __tsan_acquire(m))
UNWINDD_WRAP(bool, MutexReaderTryLock,
             "_ZN4absl7debian35Mutex13ReaderTryLockEv", (void* m), (m),
             (void)0, if (r) __tsan_acquire(m))
// Conditions: evaluated here, polling (see the top of the file).
namespace {

struct Deadline {
  bool infinite = true;
  timespec at{};  // CLOCK_REALTIME, as absl::Now()
};

// absl::Duration is {int64 seconds; uint32 quarter-nanoseconds}, with
// lo == ~0u for the infinite ones; absl::Time is the Duration since the
// Unix epoch.
Deadline After(Duration d) {
  Deadline out;
  if (d.lo == ~uint32_t{0}) return out;
  out.infinite = false;
  clock_gettime(CLOCK_REALTIME, &out.at);
  out.at.tv_sec += d.hi;
  out.at.tv_nsec += d.lo / 4;
  if (out.at.tv_nsec >= 1000000000) {
    out.at.tv_sec += 1;
    out.at.tv_nsec -= 1000000000;
  }
  return out;
}

Deadline At(Duration t) {
  Deadline out;
  if (t.lo == ~uint32_t{0}) return out;
  out.infinite = false;
  out.at.tv_sec = t.hi;
  out.at.tv_nsec = t.lo / 4;
  return out;
}

bool Passed(const Deadline& d) {
  if (d.infinite) return false;
  timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  return now.tv_sec > d.at.tv_sec ||
         (now.tv_sec == d.at.tv_sec && now.tv_nsec >= d.at.tv_nsec);
}

bool Eval(const void* cond) {
  static const auto eval =
      Real<bool (*)(const void*)>("_ZNK4absl7debian39Condition4EvalEv");
  return cond == nullptr || eval(cond);
}

}  // namespace

extern "C" void MutexLock(void* m);
extern "C" void MutexUnlock(void* m);
extern "C" void MutexReaderLock(void* m);
extern "C" void MutexReaderUnlock(void* m);

namespace {

// With `m` held (exclusively, or shared when `reader`): returns once `cond`
// holds, still holding it, or false at the deadline.
bool AwaitPolling(void* m, const void* cond, const Deadline& deadline,
                  bool reader) {
  while (!Eval(cond)) {
    if (Passed(deadline)) return false;
    reader ? MutexReaderUnlock(m) : MutexUnlock(m);
    usleep(50);
    reader ? MutexReaderLock(m) : MutexLock(m);
  }
  return true;
}

}  // namespace

#define UNWINDD_DEFINE(ret, name, mangled, params, body) \
  extern "C" ret name params __asm__(mangled);           \
  extern "C" __attribute__((weak)) ret name params body

UNWINDD_DEFINE(void, MutexLockWhen,
               "_ZN4absl7debian35Mutex8LockWhenERKNS0_9ConditionE",
               (void* m, const void* c),
               { MutexLock(m); AwaitPolling(m, c, Deadline(), false); })
UNWINDD_DEFINE(void, MutexReaderLockWhen,
               "_ZN4absl7debian35Mutex14ReaderLockWhenERKNS0_9ConditionE",
               (void* m, const void* c),
               { MutexReaderLock(m); AwaitPolling(m, c, Deadline(), true); })
UNWINDD_DEFINE(bool, MutexLockWhenWithTimeout,
               "_ZN4absl7debian35Mutex19LockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE",
               (void* m, const void* c, Duration d),
               { MutexLock(m); return AwaitPolling(m, c, After(d), false); })
UNWINDD_DEFINE(bool, MutexLockWhenWithDeadline,
               "_ZN4absl7debian35Mutex20LockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE",
               (void* m, const void* c, Duration t),
               { MutexLock(m); return AwaitPolling(m, c, At(t), false); })
UNWINDD_DEFINE(bool, MutexReaderLockWhenWithTimeout,
               "_ZN4absl7debian35Mutex25ReaderLockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE",
               (void* m, const void* c, Duration d),
               { MutexReaderLock(m); return AwaitPolling(m, c, After(d), true); })
UNWINDD_DEFINE(bool, MutexReaderLockWhenWithDeadline,
               "_ZN4absl7debian35Mutex26ReaderLockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE",
               (void* m, const void* c, Duration t),
               { MutexReaderLock(m); return AwaitPolling(m, c, At(t), true); })
// Await is called with the mutex held exclusively in this code base.
UNWINDD_DEFINE(void, MutexAwait,
               "_ZN4absl7debian35Mutex5AwaitERKNS0_9ConditionE",
               (void* m, const void* c),
               { AwaitPolling(m, c, Deadline(), false); })
UNWINDD_DEFINE(bool, MutexAwaitWithTimeout,
               "_ZN4absl7debian35Mutex16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE",
               (void* m, const void* c, Duration d),
               { return AwaitPolling(m, c, After(d), false); })
UNWINDD_DEFINE(bool, MutexAwaitWithDeadline,
               "_ZN4absl7debian35Mutex17AwaitWithDeadlineERKNS0_9ConditionENS0_4TimeE",
               (void* m, const void* c, Duration t),
               { return AwaitPolling(m, c, At(t), false); })

// CondVar: the wait unlocks `mu` and locks it again before returning.
UNWINDD_WRAP_VOID(CondVarWait, "_ZN4absl7debian37CondVar4WaitEPNS0_5MutexE",
                  (void* cv, void* mu), (cv, mu), __tsan_release(mu),
                  __tsan_acquire(mu))
UNWINDD_WRAP(bool, CondVarWaitWithTimeout,
             "_ZN4absl7debian37CondVar15WaitWithTimeoutEPNS0_5MutexENS0_8DurationE",
             (void* cv, void* mu, Duration d), (cv, mu, d),
             __tsan_release(mu), __tsan_acquire(mu))
UNWINDD_WRAP(bool, CondVarWaitWithDeadline,
             "_ZN4absl7debian37CondVar16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE",
             (void* cv, void* mu, Duration t), (cv, mu, t),
             __tsan_release(mu), __tsan_acquire(mu))

// Notification.
UNWINDD_WRAP_VOID(NotificationNotify, "_ZN4absl7debian312Notification6NotifyEv",
                  (void* n), (n),
                  (__tsan_release(n),
                   __tsan_release(reinterpret_cast<char*>(n) +
                                  kNotifiedYetOffset)),
                  (void)0)
UNWINDD_WRAP_VOID(NotificationWait,
                  "_ZNK4absl7debian312Notification19WaitForNotificationEv",
                  (const void* n), (n), (void)0,
                  __tsan_acquire(const_cast<void*>(n)))
UNWINDD_WRAP(bool, NotificationWaitWithTimeout,
             "_ZNK4absl7debian312Notification30WaitForNotificationWithTimeoutENS0_8DurationE",
             (const void* n, Duration d), (n, d), (void)0,
             __tsan_acquire(const_cast<void*>(n)))
UNWINDD_WRAP(bool, NotificationWaitWithDeadline,
             "_ZNK4absl7debian312Notification31WaitForNotificationWithDeadlineENS0_4TimeE",
             (const void* n, Duration t), (n, t), (void)0,
             __tsan_acquire(const_cast<void*>(n)))
