// deep_stacks: threads parked about 30 frames deep, the depth of a typical
// profiler sample, for the UnwindSnapshots throughput benchmark.
//
// Each thread walks down a chain of distinct functions (A0..A15), calls
// qsort() from libc, whose comparison callback walks down a second chain
// (B0..B15) and blocks in nanosleep: every frame a different PC, and the
// stack crosses from the executable into libc and back, as real stacks do.
// The four threads stop at different depths of each chain:
//
//   thread   A frames  B frames   whole stack (with libc's and ours)
//   0        9         10         about 30
//   1        12        7          about 30
//   2        5         14         about 30
//   3        15        4          about 30
//
// Self-contained (fixture_common.h is private to //testdata); the protocol
// is the same: "ready" once every thread is about to block.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/select.h>
#include <time.h>

// Keeps a call out of tail position at every optimization level.
#define KEEP_FRAME() __asm__ volatile("" ::: "memory")

static volatile int forever = 1;
static int arrived;

struct Walk {
  int a;  // A frames still to go
  int b;  // B frames still to go
};

static __thread struct Walk* current;

__attribute__((noinline)) static void SleepForever(struct Walk* w) {
  (void)w;
  __atomic_add_fetch(&arrived, 1, __ATOMIC_SEQ_CST);
  while (forever) {
    struct timespec ts = {1000000, 0};
    nanosleep(&ts, NULL);
  }
}

static void B0(struct Walk* w);
static void Turn(struct Walk* w);

// Each level is its own function (no recursion: distinct PCs, as in a real
// program's stack). noipa keeps gcc from inlining or cloning them.
#define LEVEL(name, next, field, end)               \
  __attribute__((noipa)) static void name(struct Walk* w) { \
    if (--w->field <= 0) {                         \
      end(w);                                      \
    } else {                                       \
      next(w);                                     \
    }                                              \
    KEEP_FRAME();                                  \
  }

LEVEL(B15, SleepForever, b, SleepForever)
LEVEL(B14, B15, b, SleepForever)
LEVEL(B13, B14, b, SleepForever)
LEVEL(B12, B13, b, SleepForever)
LEVEL(B11, B12, b, SleepForever)
LEVEL(B10, B11, b, SleepForever)
LEVEL(B9, B10, b, SleepForever)
LEVEL(B8, B9, b, SleepForever)
LEVEL(B7, B8, b, SleepForever)
LEVEL(B6, B7, b, SleepForever)
LEVEL(B5, B6, b, SleepForever)
LEVEL(B4, B5, b, SleepForever)
LEVEL(B3, B4, b, SleepForever)
LEVEL(B2, B3, b, SleepForever)
LEVEL(B1, B2, b, SleepForever)
LEVEL(B0, B1, b, SleepForever)

LEVEL(A15, Turn, a, Turn)
LEVEL(A14, A15, a, Turn)
LEVEL(A13, A14, a, Turn)
LEVEL(A12, A13, a, Turn)
LEVEL(A11, A12, a, Turn)
LEVEL(A10, A11, a, Turn)
LEVEL(A9, A10, a, Turn)
LEVEL(A8, A9, a, Turn)
LEVEL(A7, A8, a, Turn)
LEVEL(A6, A7, a, Turn)
LEVEL(A5, A6, a, Turn)
LEVEL(A4, A5, a, Turn)
LEVEL(A3, A4, a, Turn)
LEVEL(A2, A3, a, Turn)
LEVEL(A1, A2, a, Turn)
LEVEL(A0, A1, a, Turn)

// qsort's comparison callback: from inside libc back into our code.
static int Compare(const void* x, const void* y) {
  B0(current);
  KEEP_FRAME();
  return *(const int*)x - *(const int*)y;
}

__attribute__((noipa)) static void Turn(struct Walk* w) {
  int pair[2] = {2, 1};
  current = w;
  qsort(pair, 2, sizeof(int), Compare);
  KEEP_FRAME();
}

static void* Thread(void* arg) {
  A0((struct Walk*)arg);
  KEEP_FRAME();
  return arg;
}

int main(void) {
  static struct Walk walks[] = {{9, 10}, {12, 7}, {5, 14}, {15, 4}};
  const int n = sizeof(walks) / sizeof(walks[0]);
  for (int i = 0; i < n; ++i) {
    pthread_t t;
    if (pthread_create(&t, NULL, Thread, &walks[i]) != 0) return 1;
  }
  // Bounded (10 s): a broken fixture fails instead of hanging the harness.
  for (int i = 0; __atomic_load_n(&arrived, __ATOMIC_SEQ_CST) < n; ++i) {
    if (i > 10000) return 1;
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
  }
  fputs("ready\n", stdout);
  fflush(stdout);
  while (forever) select(0, NULL, NULL, NULL, NULL);
  return 0;
}
