// threads_c: main + 4 threads, each blocked in a different syscall at a
// different call depth, reached through noinline functions. The plainest
// fixture: no signals, no exceptions, nothing realigned; if unwinding this
// fails, nothing else will work.
//
//   main      pthread_join (futex)       main -> JoinForever
//   reader    read() on a dead pipe      3 frames of ours
//   sleeper   nanosleep                  5 frames of ours
//   poller    poll() on a dead pipe      2 frames of ours
//   epoller   epoll_wait                 4 frames of ours
#include <poll.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <time.h>

#include "testdata/fixture_common.h"

static int dead_fd;

__attribute__((noinline)) static void ReadForever(void) {
  char c;
  FixtureArrive();
  while (fixture_forever) {
    if (read(dead_fd, &c, 1) == 1) break;
  }
  FIXTURE_KEEP_FRAME();
}

__attribute__((noinline)) static void ReaderMiddle(void) {
  ReadForever();
  FIXTURE_KEEP_FRAME();
}

static void* Reader(void* arg) {
  ReaderMiddle();
  FIXTURE_KEEP_FRAME();
  return arg;
}

__attribute__((noinline)) static void SleepForever(void) {
  FixtureArrive();
  while (fixture_forever) {
    struct timespec ts = {1000000, 0};
    nanosleep(&ts, NULL);
  }
}

// A counted chain so the sleeper sits deeper than the others; `depth` is
// volatile-read so the compiler cannot unroll the chain into one frame.
__attribute__((noinline)) static void SleeperChain(int depth) {
  volatile int d = depth;
  if (d > 0) {
    SleeperChain(d - 1);
  } else {
    SleepForever();
  }
  FIXTURE_KEEP_FRAME();
}

static void* Sleeper(void* arg) {
  SleeperChain(3);
  FIXTURE_KEEP_FRAME();
  return arg;
}

__attribute__((noinline)) static void PollForever(void) {
  struct pollfd pfd = {dead_fd, POLLIN, 0};
  FixtureArrive();
  while (fixture_forever) poll(&pfd, 1, -1);
}

static void* Poller(void* arg) {
  PollForever();
  FIXTURE_KEEP_FRAME();
  return arg;
}

__attribute__((noinline)) static void EpollForever(int epfd) {
  struct epoll_event ev;
  FixtureArrive();
  while (fixture_forever) epoll_wait(epfd, &ev, 1, -1);
}

__attribute__((noinline)) static void EpollSetUp(void) {
  int epfd = epoll_create1(0);
  struct epoll_event ev = {0};
  ev.events = EPOLLIN;
  epoll_ctl(epfd, EPOLL_CTL_ADD, dead_fd, &ev);
  EpollForever(epfd);
  FIXTURE_KEEP_FRAME();
}

__attribute__((noinline)) static void EpollOuter(void) {
  EpollSetUp();
  FIXTURE_KEEP_FRAME();
}

static void* Epoller(void* arg) {
  EpollOuter();
  FIXTURE_KEEP_FRAME();
  return arg;
}

__attribute__((noinline)) static void JoinForever(pthread_t t) {
  pthread_join(t, NULL);
  FIXTURE_KEEP_FRAME();
}

int main(void) {
  void* (*bodies[])(void*) = {Reader, Sleeper, Poller, Epoller};
  pthread_t threads[4];
  dead_fd = FixtureDeadPipe();
  for (int i = 0; i < 4; ++i) {
    if (pthread_create(&threads[i], NULL, bodies[i], NULL) != 0) return 1;
  }
  FixtureAnnounceWhenArrived(4);
  JoinForever(threads[0]);
  return 0;
}
