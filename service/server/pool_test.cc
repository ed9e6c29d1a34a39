#include "service/server/pool.h"

#include <atomic>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace unwindd::service {
namespace {

TEST(WorkPoolTest, SameKeyNeverOverlapsAndKeepsOrder) {
  WorkPool pool(4, 64);
  std::atomic<int> running{0};
  std::atomic<int> max_running{0};
  absl::Mutex mu;
  std::vector<int> order;
  std::vector<std::shared_ptr<WorkPool::Job>> jobs;
  for (int i = 0; i < 12; ++i) {
    auto job = pool.Submit(42, [&, i](const std::atomic<bool>&) {
      int now = ++running;
      int prev = max_running.load();
      while (now > prev && !max_running.compare_exchange_weak(prev, now)) {
      }
      absl::SleepFor(absl::Milliseconds(1));
      {
        absl::MutexLock l(&mu);
        order.push_back(i);
      }
      --running;
    });
    ASSERT_TRUE(job.ok());
    jobs.push_back(*job);
  }
  for (auto& j : jobs) j->Wait();
  EXPECT_EQ(max_running.load(), 1);
  for (int i = 0; i < 12; ++i) EXPECT_EQ(order[i], i);
}

TEST(WorkPoolTest, DifferentKeysRunInParallel) {
  WorkPool pool(2, 8);
  absl::Notification both;
  std::atomic<int> started{0};
  auto body = [&](const std::atomic<bool>&) {
    if (++started == 2) both.Notify();
    both.WaitForNotificationWithTimeout(absl::Seconds(5));
  };
  auto a = pool.Submit(1, body);
  auto b = pool.Submit(2, body);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_TRUE((*a)->Wait(absl::Now() + absl::Seconds(5)));
  EXPECT_TRUE((*b)->Wait(absl::Now() + absl::Seconds(5)));
  EXPECT_TRUE(both.HasBeenNotified());
}

TEST(WorkPoolTest, FullQueueIsResourceExhaustedAndWithdrawnJobsNeverRun) {
  WorkPool pool(1, 2);
  absl::Notification release;
  auto blocker = pool.Submit(0, [&](const std::atomic<bool>&) {
    release.WaitForNotification();
  });
  ASSERT_TRUE(blocker.ok());
  while (pool.running() == 0) absl::SleepFor(absl::Milliseconds(1));
  bool ran = false;
  auto q1 = pool.Submit(0, [&](const std::atomic<bool>&) { ran = true; });
  auto q2 = pool.Submit(0, [](const std::atomic<bool>&) {});
  ASSERT_TRUE(q1.ok() && q2.ok());
  EXPECT_EQ(pool.Submit(0, [](const std::atomic<bool>&) {}).status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(pool.Withdraw(*q1));
  EXPECT_TRUE((*q1)->Wait(absl::Now()));  // done without running
  EXPECT_FALSE(pool.Withdraw(*blocker));  // running: too late
  release.Notify();
  (*q2)->Wait();
  EXPECT_FALSE(ran);
  EXPECT_FALSE((*q1)->ran());
  EXPECT_TRUE((*q2)->ran());
}

TEST(WorkPoolTest, ShutdownCancelsRunningJobsAndRefusesNewOnes) {
  WorkPool pool(1, 4);
  std::atomic<bool> saw_cancel{false};
  auto job = pool.Submit(0, [&](const std::atomic<bool>& cancel) {
    while (!cancel.load()) absl::SleepFor(absl::Milliseconds(1));
    saw_cancel = true;
  });
  ASSERT_TRUE(job.ok());
  while (pool.running() == 0) absl::SleepFor(absl::Milliseconds(1));
  pool.Shutdown(/*cancel=*/true);
  EXPECT_TRUE(saw_cancel.load());
  EXPECT_EQ(pool.Submit(0, [](const std::atomic<bool>&) {}).status().code(),
            absl::StatusCode::kUnavailable);
}

TEST(WorkPoolTest, RunHereIfIdleTakesAFreeWorkerSlotOnTheCallersThread) {
  WorkPool pool(1, 4);
  std::atomic<bool> cancel{false};
  std::thread::id ran_on;
  int running_inside = 0;
  EXPECT_TRUE(pool.RunHereIfIdle(
      7,
      [&](const std::atomic<bool>&) {
        ran_on = std::this_thread::get_id();
        running_inside = pool.running();
      },
      cancel));
  EXPECT_EQ(ran_on, std::this_thread::get_id());
  EXPECT_EQ(running_inside, 1);
  EXPECT_EQ(pool.running(), 0);
}

TEST(WorkPoolTest, RunHereIfIdleRefusesWhenEveryWorkerIsBusy) {
  WorkPool pool(1, 4);
  absl::Notification release;
  auto blocker = pool.Submit(0, [&](const std::atomic<bool>&) {
    release.WaitForNotification();
  });
  ASSERT_TRUE(blocker.ok());
  while (pool.running() == 0) absl::SleepFor(absl::Milliseconds(1));
  std::atomic<bool> cancel{false};
  bool ran = false;
  EXPECT_FALSE(pool.RunHereIfIdle(0, [&](const std::atomic<bool>&) { ran = true; }, cancel));
  EXPECT_FALSE(ran);
  release.Notify();
  (*blocker)->Wait();
}

// While a job runs on its caller's thread, it holds a worker slot: a
// submitted job waits for it, and so does another job with its key.
TEST(WorkPoolTest, JobRunHereHoldsItsSlotAndKey) {
  WorkPool pool(1, 4);
  std::atomic<bool> cancel{false};
  std::atomic<bool> inside{false}, overlapped{false};
  std::shared_ptr<WorkPool::Job> queued;
  EXPECT_TRUE(pool.RunHereIfIdle(
      5,
      [&](const std::atomic<bool>&) {
        inside = true;
        std::atomic<bool> other{false};
        EXPECT_FALSE(pool.RunHereIfIdle(5, [](const std::atomic<bool>&) {}, other));
        auto j = pool.Submit(0, [&](const std::atomic<bool>&) {
          if (inside.load()) overlapped = true;
        });
        ASSERT_TRUE(j.ok());
        queued = *j;
        // The worker is free but the slot is not: the job must not start.
        EXPECT_FALSE(queued->Wait(absl::Now() + absl::Milliseconds(50)));
        inside = false;
      },
      cancel));
  ASSERT_NE(queued, nullptr);
  EXPECT_TRUE(queued->Wait(absl::Now() + absl::Seconds(5)));
  EXPECT_FALSE(overlapped.load());
  // A queued job that could run goes first: no jumping the queue.
  absl::Notification release;
  WorkPool busy(1, 4);
  auto blocker = busy.Submit(1, [&](const std::atomic<bool>&) {
    release.WaitForNotification();
  });
  auto waiting = busy.Submit(1, [](const std::atomic<bool>&) {});
  ASSERT_TRUE(blocker.ok() && waiting.ok());
  while (busy.running() == 0) absl::SleepFor(absl::Milliseconds(1));
  EXPECT_FALSE(busy.RunHereIfIdle(2, [](const std::atomic<bool>&) {}, cancel));
  release.Notify();
  (*waiting)->Wait();
}

TEST(WorkPoolTest, ShutdownCancelsJobsRunningHere) {
  WorkPool pool(1, 4);
  std::atomic<bool> cancel{false};
  absl::Notification started;
  std::thread caller([&] {
    pool.RunHereIfIdle(
        0,
        [&](const std::atomic<bool>& c) {
          started.Notify();
          while (!c.load()) absl::SleepFor(absl::Milliseconds(1));
        },
        cancel);
  });
  started.WaitForNotification();
  pool.Shutdown(/*cancel=*/true);
  caller.join();
  EXPECT_TRUE(cancel.load());
  EXPECT_FALSE(pool.RunHereIfIdle(0, [](const std::atomic<bool>&) {}, cancel));
}

TEST(WatchdogTest, CancelsAtTheDeadline) {
  Watchdog dog(absl::Milliseconds(5));
  Watchdog::Watch w(absl::Now() + absl::Milliseconds(30), nullptr);
  dog.Add(&w);
  absl::Time give_up = absl::Now() + absl::Seconds(10);
  while (!w.cancel.load() && absl::Now() < give_up) absl::SleepFor(absl::Milliseconds(1));
  dog.Remove(&w);
  EXPECT_TRUE(w.cancel.load());
  EXPECT_EQ(w.fired(), Watchdog::kDeadline);
}

TEST(WatchdogTest, CancelsWhenTheClientGivesUpAndNotBefore) {
  Watchdog dog(absl::Milliseconds(5));
  std::atomic<bool> client_gone{false};
  Watchdog::Watch w(absl::InfiniteFuture(), [&] { return client_gone.load(); });
  dog.Add(&w);
  absl::SleepFor(absl::Milliseconds(50));
  EXPECT_FALSE(w.cancel.load());
  client_gone = true;
  absl::Time give_up = absl::Now() + absl::Seconds(10);
  while (!w.cancel.load() && absl::Now() < give_up) absl::SleepFor(absl::Milliseconds(1));
  dog.Remove(&w);
  EXPECT_EQ(w.fired(), Watchdog::kGaveUp);
}

// After a quiet second the watchdog sleeps; a new watch wakes it.
TEST(WatchdogTest, WakesForAWatchAfterSleeping) {
  Watchdog dog(absl::Milliseconds(5));
  absl::SleepFor(absl::Milliseconds(1200));
  Watchdog::Watch w(absl::Now(), nullptr);
  dog.Add(&w);
  absl::Time give_up = absl::Now() + absl::Seconds(10);
  while (!w.cancel.load() && absl::Now() < give_up) absl::SleepFor(absl::Milliseconds(1));
  dog.Remove(&w);
  EXPECT_EQ(w.fired(), Watchdog::kDeadline);
}

}  // namespace
}  // namespace unwindd::service
