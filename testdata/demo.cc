// demo: the process `unwind demo` starts, and a C++ fixture for the
// end-to-end tests. Five threads, each blocked somewhere different:
//
//   main       std::thread::join (futex in pthread_join)
//   recurser   17 frames of Recurse(), then std::condition_variable::wait
//   functor    a std::function holding a lambda, then nanosleep
//   locker     std::mutex::lock on a mutex main holds forever (futex)
//   service    a virtual call, then read() on a dead pipe
#include <time.h>

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "testdata/fixture_common.h"

namespace {

std::mutex cv_mutex;
std::condition_variable cv;
std::mutex held_by_main;
int dead_fd = -1;

__attribute__((noinline)) void WaitOnCondition() {
  std::unique_lock<std::mutex> lock(cv_mutex);
  FixtureArrive();
  cv.wait(lock, [] { return !fixture_forever; });
}

// Returns a value that depends on the callee so the recursive call is not in
// tail position and every level keeps its frame, even at -O3.
__attribute__((noinline)) int Recurse(int depth) {
  volatile int d = depth;
  if (d == 0) {
    WaitOnCondition();
    return 0;
  }
  int r = Recurse(d - 1);
  FIXTURE_KEEP_FRAME();
  return r + 1;
}

__attribute__((noinline)) void SleepForever() {
  FixtureArrive();
  while (fixture_forever) {
    timespec ts = {1000000, 0};
    nanosleep(&ts, nullptr);
  }
}

__attribute__((noinline)) void RunCallback(const std::function<void(int)>& f) {
  f(3);
  FIXTURE_KEEP_FRAME();
}

__attribute__((noinline)) void LockHeldMutex() {
  FixtureArrive();
  std::lock_guard<std::mutex> lock(held_by_main);
}

class Service {
 public:
  virtual ~Service() = default;
  virtual void Serve() = 0;
};

class PipeService : public Service {
 public:
  __attribute__((noinline)) void Serve() override {
    char c;
    FixtureArrive();
    while (fixture_forever) {
      if (read(dead_fd, &c, 1) == 1) break;
    }
    FIXTURE_KEEP_FRAME();
  }
};

__attribute__((noinline)) void ServeThrough(Service* service) {
  service->Serve();
  FIXTURE_KEEP_FRAME();
}

}  // namespace

int main() {
  dead_fd = FixtureDeadPipe();
  held_by_main.lock();  // Never unlocked: the locker thread blocks on it.

  volatile int captured = 2;
  std::function<void(int)> callback = [&captured](int n) {
    if (n + captured > 0) SleepForever();
    FIXTURE_KEEP_FRAME();
  };
  std::unique_ptr<Service> service = std::make_unique<PipeService>();

  std::vector<std::thread> threads;
  threads.emplace_back([] { Recurse(16); });
  threads.emplace_back([&callback] { RunCallback(callback); });
  threads.emplace_back([] { LockHeldMutex(); });
  threads.emplace_back([&service] { ServeThrough(service.get()); });
  FixtureAnnounceWhenArrived(4);
  threads[0].join();
  return 0;
}
