// aarch64 threads: main + 3 threads, each blocked in a different syscall at
// a different call depth; main then crashes (see fixture.h).
//
//   main      SIGSEGV in FixtureCrash    main -> FixtureCrashMiddle -> FixtureCrash
//   reader    read() on a dead pipe      Reader -> ReaderMiddle -> ReadForever
//   sleeper   nanosleep                  Sleeper -> SleeperChain x4 -> SleepForever
//   poller    poll() on a dead pipe      Poller -> PollForever
#include <poll.h>
#include <time.h>

#include "fixture.h"

static int dead_fd;

NOINLINE static void ReadForever(void) {
  char c;
  FixtureArrive();
  while (fixture_forever) {
    if (read(dead_fd, &c, 1) == 1) break;
  }
  KEEP_FRAME();
}

NOINLINE static void ReaderMiddle(void) {
  ReadForever();
  KEEP_FRAME();
}

static void* Reader(void* arg) {
  ReaderMiddle();
  KEEP_FRAME();
  return arg;
}

NOINLINE static void SleepForever(void) {
  FixtureArrive();
  while (fixture_forever) {
    struct timespec ts = {1000000, 0};
    nanosleep(&ts, NULL);
  }
}

NOINLINE static void SleeperChain(int depth) {
  volatile int d = depth;
  if (d > 0) {
    SleeperChain(d - 1);
  } else {
    SleepForever();
  }
  KEEP_FRAME();
}

static void* Sleeper(void* arg) {
  SleeperChain(3);
  KEEP_FRAME();
  return arg;
}

NOINLINE static void PollForever(void) {
  struct pollfd pfd = {dead_fd, POLLIN, 0};
  FixtureArrive();
  while (fixture_forever) poll(&pfd, 1, -1);
}

static void* Poller(void* arg) {
  PollForever();
  KEEP_FRAME();
  return arg;
}

int main(void) {
  dead_fd = FixtureDeadPipe();
  FixtureStart(Reader);
  FixtureStart(Sleeper);
  FixtureStart(Poller);
  FixtureCrashWhenArrived(3);
  return 0;
}
