#include "service/server_pool.h"

#include <atomic>
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

}  // namespace
}  // namespace unwindd::service
