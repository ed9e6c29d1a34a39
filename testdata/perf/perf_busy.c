// perf_busy: a CPU-bound fixture for `perf record -e cpu-clock`, whose
// samples land in the places issue 13 names: libc callbacks (qsort's
// msort_with_tmp and its epilogues), recursion, the vDSO (clock_gettime),
// a signal handler, stacks deeper than perf's 8 KiB stack copy, and plain
// loops, on several threads. The blocking
// fixtures in testdata/ are almost never on a CPU, so a cpu-clock
// recording of them holds only their start-up.
//
// Prints "ready" once every thread runs, then runs until killed.
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define KEEP_FRAME() __asm__ volatile("" ::: "memory")

static volatile int forever = 1;
static volatile unsigned long sink;
static int started;

static int CompareInts(const void* a, const void* b) {
  int x = *(const int*)a, y = *(const int*)b;
  return x < y ? -1 : x > y;
}

__attribute__((noinline)) static void SortLoop(void) {
  enum { kN = 4096 };
  int* v = malloc(sizeof(int) * kN);
  unsigned seed = 1;
  while (forever) {
    for (int i = 0; i < kN; ++i) v[i] = rand_r(&seed);
    qsort(v, kN, sizeof(int), CompareInts);
  }
  free(v);
  KEEP_FRAME();
}

__attribute__((noipa)) static unsigned long Recurse(int depth, unsigned long x) {
  if (depth == 0) {
    for (int i = 0; i < 2000; ++i) x = x * 6364136223846793005UL + 1442695040888963407UL;
    return x;
  }
  unsigned long r = Recurse(depth - 1, x + depth);
  KEEP_FRAME();
  return r ^ (unsigned long)depth;
}

__attribute__((noinline)) static void RecurseLoop(void) {
  while (forever) sink += Recurse(24, sink);
  KEEP_FRAME();
}

// 200 frames of at least 64 bytes: the walk leaves perf's stack copy
// (--call-graph dwarf copies 8 KiB from SP) long before main.
__attribute__((noipa)) static unsigned long Deep(int depth, unsigned long x) {
  volatile unsigned long pad[6];
  pad[0] = x;
  if (depth == 0) {
    for (int i = 0; i < 20000; ++i) x = x * 2862933555777941757UL + 3037000493UL;
    return x + pad[0];
  }
  unsigned long r = Deep(depth - 1, x ^ (unsigned long)depth);
  KEEP_FRAME();
  return r + pad[0];
}

__attribute__((noinline)) static void DeepLoop(void) {
  while (forever) sink += Deep(200, sink);
  KEEP_FRAME();
}

__attribute__((noinline)) static void ClockLoop(void) {
  struct timespec ts;
  while (forever) {
    clock_gettime(CLOCK_MONOTONIC, &ts);
    sink += ts.tv_nsec;
  }
  KEEP_FRAME();
}

static void OnAlarm(int sig) {
  unsigned long x = sink;
  for (int i = 0; i < 200000; ++i) x = x * 31 + i;
  sink = x + sig;
}

__attribute__((noinline)) static void SpinLoop(void) {
  unsigned long x = 1;
  while (forever) {
    for (int i = 0; i < 1000; ++i) x = x * 33 + i;
    sink = x;
  }
  KEEP_FRAME();
}

static void* Thread(void* arg) {
  __atomic_add_fetch(&started, 1, __ATOMIC_SEQ_CST);
  switch ((int)(long)arg) {
    case 0:
      SortLoop();
      break;
    case 1:
      RecurseLoop();
      break;
    case 2:
      ClockLoop();
      break;
    case 3:
      DeepLoop();
      break;
  }
  return arg;
}

int main(void) {
  pthread_t t[4];
  for (long i = 0; i < 4; ++i) pthread_create(&t[i], NULL, Thread, (void*)i);
  while (__atomic_load_n(&started, __ATOMIC_SEQ_CST) < 4) usleep(1000);
  // The main thread spins and takes a SIGALRM every 10 ms of its CPU time.
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = OnAlarm;
  sigaction(SIGPROF, &sa, NULL);
  struct itimerval it = {{0, 10000}, {0, 10000}};
  setitimer(ITIMER_PROF, &it, NULL);
  fputs("ready\n", stdout);
  fflush(stdout);
  SpinLoop();
  for (int i = 0; i < 4; ++i) pthread_join(t[i], NULL);
  return 0;
}
