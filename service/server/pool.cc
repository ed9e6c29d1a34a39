#include "service/server/pool.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"

namespace unwindd::service {

bool WorkPool::Job::Wait(absl::Time deadline) {
  absl::MutexLock l(&mu_);
  auto done = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return done_; };
  return mu_.AwaitWithDeadline(absl::Condition(&done), deadline);
}

void WorkPool::Job::Cancel() { cancel_.store(true); }

bool WorkPool::Job::ran() const {
  absl::MutexLock l(&mu_);
  return ran_;
}

absl::Duration WorkPool::Job::queued_for() const {
  absl::MutexLock l(&mu_);
  return ran_ ? started_ - submitted_ : absl::Now() - submitted_;
}

WorkPool::WorkPool(int threads, int max_queued)
    : max_queued_(max_queued), slots_(threads) {
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { WorkerLoop(); });
}

WorkPool::~WorkPool() { Shutdown(/*cancel=*/true); }

absl::StatusOr<std::shared_ptr<WorkPool::Job>> WorkPool::Submit(int64_t key,
                                                                 Fn fn) {
  std::shared_ptr<Job> job(new Job(key, std::move(fn)));
  absl::MutexLock l(&mu_);
  if (stopping_) return absl::UnavailableError("unwindd is shutting down");
  if (static_cast<int>(queue_.size()) >= max_queued_) {
    return absl::ResourceExhaustedError(
        "unwindd is at its request limit; retry later");
  }
  queue_.push_back(job);
  return job;
}

bool WorkPool::Withdraw(const std::shared_ptr<Job>& job) {
  {
    absl::MutexLock l(&mu_);
    auto it = std::find(queue_.begin(), queue_.end(), job);
    if (it == queue_.end()) return false;
    queue_.erase(it);
  }
  job->fn_ = nullptr;
  absl::MutexLock jl(&job->mu_);
  job->done_ = true;
  return true;
}

bool WorkPool::HasRunnable() const {
  for (const std::shared_ptr<Job>& j : queue_) {
    if (j->key_ == 0 || !running_keys_.contains(j->key_)) return true;
  }
  return false;
}

std::shared_ptr<WorkPool::Job> WorkPool::TakeRunnable() {
  for (auto it = queue_.begin(); it != queue_.end(); ++it) {
    if ((*it)->key_ != 0 && running_keys_.contains((*it)->key_)) continue;
    std::shared_ptr<Job> j = std::move(*it);
    queue_.erase(it);
    return j;
  }
  return nullptr;
}

void WorkPool::WorkerLoop() {
  while (true) {
    std::shared_ptr<Job> job;
    {
      absl::MutexLock l(&mu_);
      // Jobs run here by their callers take worker slots too.
      auto ready = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
        return (HasRunnable() && HasFreeSlot()) || (stopping_ && queue_.empty());
      };
      mu_.Await(absl::Condition(&ready));
      job = TakeRunnable();
      if (job == nullptr) return;  // stopping, nothing left
      if (job->key_ != 0) running_keys_.insert(job->key_);
      running_jobs_.insert(job);
    }
    bool run = !job->cancel_.load();
    {
      absl::MutexLock jl(&job->mu_);
      job->ran_ = run;
      job->started_ = absl::Now();
    }
    if (run) job->fn_(job->cancel_);
    // Drop the body (and whatever it captured) before waking the waiter.
    job->fn_ = nullptr;
    {
      absl::MutexLock l(&mu_);
      if (job->key_ != 0) running_keys_.erase(job->key_);
      running_jobs_.erase(job);
    }
    absl::MutexLock jl(&job->mu_);
    job->done_ = true;
  }
}

bool WorkPool::RunHereIfIdle(int64_t key, const Fn& fn, std::atomic<bool>& cancel) {
  {
    absl::MutexLock l(&mu_);
    if (stopping_ || HasRunnable() || !HasFreeSlot() ||
        (key != 0 && running_keys_.contains(key))) {
      return false;
    }
    if (key != 0) running_keys_.insert(key);
    here_.insert(&cancel);
  }
  fn(cancel);
  absl::MutexLock l(&mu_);
  if (key != 0) running_keys_.erase(key);
  here_.erase(&cancel);
  return true;
}

void WorkPool::Shutdown(bool cancel) {
  {
    absl::MutexLock l(&mu_);
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
    if (cancel) {
      for (const std::shared_ptr<Job>& j : queue_) j->Cancel();
      for (const std::shared_ptr<Job>& j : running_jobs_) j->Cancel();
      for (std::atomic<bool>* c : here_) c->store(true);
    }
  }
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

int WorkPool::running() const {
  absl::MutexLock l(&mu_);
  return static_cast<int>(running_jobs_.size() + here_.size());
}

int WorkPool::queued() const {
  absl::MutexLock l(&mu_);
  return static_cast<int>(queue_.size());
}

Watchdog::Watchdog(absl::Duration interval)
    : interval_(interval), thread_([this] { Loop(); }) {}

Watchdog::~Watchdog() {
  {
    absl::MutexLock l(&mu_);
    stop_ = true;
  }
  thread_.join();
}

void Watchdog::Add(Watch* w) {
  absl::MutexLock l(&mu_);
  watches_.insert(w);
  awake_ = true;  // wakes the loop if it was asleep; a no-op if not
}

void Watchdog::Remove(Watch* w) {
  absl::MutexLock l(&mu_);
  watches_.erase(w);
}

void Watchdog::Loop() {
  // Polls while there is something to watch, and for a second after (a
  // stream's next sample is usually close), then sleeps until Add.
  const int idle_rounds = std::max<int64_t>(1, absl::Seconds(1) / interval_);
  int idle = 0;
  absl::MutexLock l(&mu_);
  while (true) {
    auto wake = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return stop_ || awake_; };
    mu_.Await(absl::Condition(&wake));
    if (stop_) return;
    auto stop = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return stop_; };
    if (mu_.AwaitWithTimeout(absl::Condition(&stop), interval_)) return;
    const absl::Time now = absl::Now();
    for (Watch* w : watches_) {
      if (w->fired() != kNone) continue;
      // Under mu_: Remove waits, so `w` is alive. gave_up() (a call's
      // IsCancelled) is thread-safe and does not block.
      Reason r = now >= w->deadline ? kDeadline
                 : (w->gave_up && w->gave_up()) ? kGaveUp
                                                : kNone;
      if (r == kNone) continue;
      w->reason.store(r);
      w->cancel.store(true);
    }
    idle = watches_.empty() ? idle + 1 : 0;
    if (idle >= idle_rounds) {
      awake_ = false;
      idle = 0;
    }
  }
}

}  // namespace unwindd::service
