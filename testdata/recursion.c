// recursion: deep stacks, to test frame limits, the module/row caches under
// many identical PCs, and that nobody stops early.
//
//   main     select() with no fds and no timeout, one frame down
//   plain    300 frames of Plain(), then nanosleep
//   mutual   Ping() <-> Pong() 2 * 120 frames, then read() on a dead pipe
//   medium   40 frames of Plain(), then nanosleep: with libc's, the 46-frame
//            stack issue 7's speed targets are stated for
//
// Together with the libc frames the plain thread is deeper than eu-stack's
// default limit of 256 frames (the harness passes -n 0).
#include <pthread.h>
#include <sys/select.h>
#include <time.h>

#include "testdata/fixture_common.h"

static int dead_fd;

__attribute__((noinline)) static void SleepForever(void) {
  FixtureArrive();
  while (fixture_forever) {
    struct timespec ts = {1000000, 0};
    nanosleep(&ts, NULL);
  }
}

// The asm barrier between the call and the return keeps the call out of tail
// position, so gcc cannot turn the recursion into a loop (an add alone is not
// enough: gcc's tail-recursion pass introduces an accumulator for
// `return f(n - 1) + 1`); noipa keeps it from cloning the function or
// partially inlining it into itself.
__attribute__((noipa)) static int Plain(int depth) {
  if (depth == 0) {
    SleepForever();
    return 0;
  }
  int r = Plain(depth - 1);
  FIXTURE_KEEP_FRAME();
  return r + 1;
}

__attribute__((noinline)) static void ReadForever(void) {
  char c;
  FixtureArrive();
  while (fixture_forever) {
    if (read(dead_fd, &c, 1) == 1) break;
  }
  FIXTURE_KEEP_FRAME();
}

__attribute__((noipa)) static int Pong(int depth);

__attribute__((noipa)) static int Ping(int depth) {
  if (depth == 0) {
    ReadForever();
    return 0;
  }
  int r = Pong(depth);
  FIXTURE_KEEP_FRAME();
  return r + 1;
}

__attribute__((noipa)) static int Pong(int depth) {
  int r = Ping(depth - 1);
  FIXTURE_KEEP_FRAME();
  return r + 2;
}

static void* PlainThread(void* arg) {
  Plain(299);
  FIXTURE_KEEP_FRAME();
  return arg;
}

static void* MediumThread(void* arg) {
  Plain(39);
  FIXTURE_KEEP_FRAME();
  return arg;
}

static void* MutualThread(void* arg) {
  Ping(120);
  FIXTURE_KEEP_FRAME();
  return arg;
}

__attribute__((noinline)) static void SelectForever(void) {
  while (fixture_forever) select(0, NULL, NULL, NULL, NULL);
}

int main(void) {
  pthread_t t;
  dead_fd = FixtureDeadPipe();
  if (pthread_create(&t, NULL, PlainThread, NULL) != 0) return 1;
  if (pthread_create(&t, NULL, MutualThread, NULL) != 0) return 1;
  if (pthread_create(&t, NULL, MediumThread, NULL) != 0) return 1;
  FixtureAnnounceWhenArrived(3);
  SelectForever();
  return 0;
}
