// The worker threads every unwind runs on: a fixed number of threads and a
// bounded queue, so load beyond capacity is refused (RESOURCE_EXHAUSTED)
// rather than queued without limit. Jobs with the same non-zero key (a pid)
// never run at the same time and start in submission order: two ptrace
// attaches to one process cannot both succeed, and the second would fail
// with "already traced". Different keys run in parallel.
//
// A job runs start to end on one worker thread, which is what ptrace needs
// (live_target.h: attach, unwind and detach on one thread).
//
//   WorkPool pool(/*threads=*/4, /*max_queued=*/256);
//   absl::StatusOr<std::shared_ptr<WorkPool::Job>> job = pool.Submit(pid,
//       [&](const std::atomic<bool>& cancel) { ... });
//   if (!(*job)->Wait(deadline)) (*job)->Cancel();   // then Wait() again
//
// Jobs that need no thread of their own (a snapshot sample; a live unwind,
// whose ptrace requests only need one thread from attach to detach) may
// instead run on the caller's thread when a worker is free, counting as
// one of the `threads` running jobs, which saves the two thread switches
// a handoff costs (RunHereIfIdle); a Watchdog then does for them what the
// waiting caller does for a submitted job: cancel it at its deadline or
// when its client gives up.
#ifndef UNWINDD_SERVICE_SERVER_POOL_H_
#define UNWINDD_SERVICE_SERVER_POOL_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace unwindd::service {

class WorkPool {
 public:
  // The job body. `cancel` becomes true when the requester gives up (deadline,
  // cancelled call, server shutdown); long work should check it.
  using Fn = std::function<void(const std::atomic<bool>& cancel)>;

  class Job {
   public:
    // Waits until the job has run (true) or `deadline` passes (false).
    bool Wait(absl::Time deadline = absl::InfiniteFuture());
    // Asks a running job to stop early; a job that has not started yet never
    // starts (its body is skipped) and counts as done.
    void Cancel();
    // False if the body was skipped because the job was cancelled first.
    bool ran() const;
    // Time spent queued before a worker took it.
    absl::Duration queued_for() const;

   private:
    friend class WorkPool;
    Job(int64_t key, Fn fn) : key_(key), fn_(std::move(fn)), submitted_(absl::Now()) {}

    const int64_t key_;
    Fn fn_;
    const absl::Time submitted_;
    std::atomic<bool> cancel_{false};
    mutable absl::Mutex mu_;
    bool done_ ABSL_GUARDED_BY(mu_) = false;
    bool ran_ ABSL_GUARDED_BY(mu_) = false;
    absl::Time started_ ABSL_GUARDED_BY(mu_);
  };

  WorkPool(int threads, int max_queued);
  // Shuts down (see Shutdown) if not done yet.
  ~WorkPool();

  // ResourceExhausted when `max_queued` jobs are already waiting;
  // Unavailable after Shutdown. `key` 0 means "no key".
  absl::StatusOr<std::shared_ptr<Job>> Submit(int64_t key, Fn fn);

  // Removes `job` from the queue if no worker has taken it yet (true: it
  // will never run, and counts as done). False if it is running or ran.
  bool Withdraw(const std::shared_ptr<Job>& job);

  // Runs `fn(cancel)` here, on the calling thread, if fewer than `threads`
  // jobs are running, no queued job could run instead (nothing jumps the
  // queue) and none with `key` is running; meanwhile it counts as a running
  // job (running(), the limit, the key), and Shutdown(cancel=true) sets
  // `cancel`. False, without running `fn`, otherwise (then Submit) and
  // after Shutdown.
  bool RunHereIfIdle(int64_t key, const Fn& fn, std::atomic<bool>& cancel);

  // Refuses new jobs, lets queued and running ones finish (they see cancel
  // if `cancel` is true: running walks stop at the next frame, queued jobs
  // are skipped), and joins the threads.
  void Shutdown(bool cancel);

  int running() const;
  int queued() const;

 private:
  void WorkerLoop();
  // The first queued job whose key is not running; nullptr if none.
  std::shared_ptr<Job> TakeRunnable() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool HasRunnable() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Fewer than `threads` jobs run, counting those run by their callers.
  bool HasFreeSlot() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return static_cast<int>(running_jobs_.size() + here_.size()) < slots_;
  }

  const int max_queued_;
  mutable absl::Mutex mu_;
  std::deque<std::shared_ptr<Job>> queue_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<int64_t> running_keys_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<std::shared_ptr<Job>> running_jobs_ ABSL_GUARDED_BY(mu_);
  // Jobs running on their caller's thread (RunHereIfIdle): their flags.
  absl::flat_hash_set<std::atomic<bool>*> here_ ABSL_GUARDED_BY(mu_);
  const int slots_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

// Cancels work running outside the pool's workers (RunHereIfIdle) at its
// deadline or once `gave_up` says its client went away: what a caller
// waiting for a submitted job does in its wait loop. One thread, polling
// what is registered every `interval`; it sleeps on a condition once
// nothing has been registered for a while, so an idle server is not woken.
//
//   Watchdog::Watch w(deadline, [&] { return context->IsCancelled(); });
//   watchdog.Add(&w);
//   ... work that checks w.cancel ...
//   watchdog.Remove(&w);
//   if (w.fired() != Watchdog::kNone) ...   // deadline or client
class Watchdog {
 public:
  enum Reason { kNone = 0, kDeadline = 1, kGaveUp = 2 };
  struct Watch {
    Watch(absl::Time deadline, std::function<bool()> gave_up)
        : deadline(deadline), gave_up(std::move(gave_up)) {}
    Reason fired() const { return static_cast<Reason>(reason.load()); }
    const absl::Time deadline;
    const std::function<bool()> gave_up;
    std::atomic<bool> cancel{false};
    std::atomic<int> reason{kNone};
  };

  explicit Watchdog(absl::Duration interval);
  ~Watchdog();

  // `w` must stay alive until Remove(w), which returns once the watchdog
  // is no longer looking at it.
  void Add(Watch* w);
  void Remove(Watch* w);

 private:
  void Loop();

  const absl::Duration interval_;
  absl::Mutex mu_;
  absl::flat_hash_set<Watch*> watches_ ABSL_GUARDED_BY(mu_);
  bool awake_ ABSL_GUARDED_BY(mu_) = false;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace unwindd::service

#endif  // UNWINDD_SERVICE_SERVER_POOL_H_
