// cxx_catch: C++ stacks around exception handling, templates and virtual
// calls.
//
//   main        std::thread::join (futex)
//   catcher     throws, and inside `catch (...)` calls down to read() on a
//               dead pipe: the frames run on top of the catching frame after
//               the personality routine has installed the landing pad.
//   destructor  throws through a frame holding a Blocker; the Blocker's
//               destructor runs from the cleanup landing pad during unwinding
//               and blocks in pause() (it never returns, so no exception ever
//               escapes it and std::terminate is never reached).
//   templated   Depth<4>::Go() -> ... -> Depth<0>::Go() -> a virtual
//               Handler::Handle() -> epoll_wait
//   nested      a catch block that throws and catches again, blocking in
//               nanosleep inside the inner catch
#include <sys/epoll.h>
#include <time.h>

#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "testdata/fixture_common.h"

namespace {

int dead_fd = -1;

__attribute__((noinline)) void ReadForever() {
  char c;
  FixtureArrive();
  while (fixture_forever) {
    if (read(dead_fd, &c, 1) == 1) break;
  }
  FIXTURE_KEEP_FRAME();
}

__attribute__((noinline)) void Thrower(int what) {
  if (what > 0) throw std::runtime_error("fixture");
  FIXTURE_KEEP_FRAME();
}

__attribute__((noinline)) void BlockInCatch() {
  try {
    Thrower(1);
  } catch (...) {
    ReadForever();
  }
  FIXTURE_KEEP_FRAME();
}

struct Blocker {
  __attribute__((noinline)) ~Blocker() {
    FixtureArrive();
    while (fixture_forever) pause();
  }
};

__attribute__((noinline)) void ThrowPastBlocker() {
  Blocker blocker;
  Thrower(2);
  FIXTURE_KEEP_FRAME();
}

__attribute__((noinline)) void CatchAfterBlocker() {
  try {
    ThrowPastBlocker();
  } catch (...) {
    // Never reached: the Blocker's destructor does not return.
  }
  FIXTURE_KEEP_FRAME();
}

class Handler {
 public:
  virtual ~Handler() = default;
  virtual void Handle(int fd) = 0;
};

class EpollHandler : public Handler {
 public:
  __attribute__((noinline)) void Handle(int fd) override {
    int epfd = epoll_create1(0);
    epoll_event ev = {};
    ev.events = EPOLLIN;
    epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
    FixtureArrive();
    while (fixture_forever) epoll_wait(epfd, &ev, 1, -1);
  }
};

template <int N>
struct Depth {
  __attribute__((noinline)) static void Go(Handler* h) {
    Depth<N - 1>::Go(h);
    FIXTURE_KEEP_FRAME();
  }
};

template <>
struct Depth<0> {
  __attribute__((noinline)) static void Go(Handler* h) {
    h->Handle(dead_fd);
    FIXTURE_KEEP_FRAME();
  }
};

__attribute__((noinline)) void SleepForever() {
  FixtureArrive();
  while (fixture_forever) {
    timespec ts = {1000000, 0};
    nanosleep(&ts, nullptr);
  }
}

__attribute__((noinline)) void NestedCatch() {
  try {
    Thrower(3);
  } catch (const std::exception&) {
    try {
      Thrower(4);
    } catch (...) {
      SleepForever();
    }
  }
  FIXTURE_KEEP_FRAME();
}

}  // namespace

int main() {
  dead_fd = FixtureDeadPipe();
  std::unique_ptr<Handler> handler = std::make_unique<EpollHandler>();
  std::vector<std::thread> threads;
  threads.emplace_back([] { BlockInCatch(); });
  threads.emplace_back([] { CatchAfterBlocker(); });
  threads.emplace_back([&handler] { Depth<4>::Go(handler.get()); });
  threads.emplace_back([] { NestedCatch(); });
  FixtureAnnounceWhenArrived(4);
  threads[0].join();
  return 0;
}
