// stepper: the code testdata/step/every_instruction_test.cc single-steps
// through, one instruction at a time: libc's qsort with its msort_with_tmp
// (callee-saved registers pushed and popped, the epilogue issue 13 names),
// a comparator callback, the vDSO, and functions of our own at -O0 (frame
// pointers, `leave; ret`) and -O2 (callee-saved registers, tail calls).
//
// Prints "ready", then loops: a 1 ms sleep (where the test attaches) and
// one round of work, until killed.
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define KEEP_FRAME() __asm__ volatile("" ::: "memory")

static volatile unsigned long sink;

static int CompareInts(const void* a, const void* b) {
  int x = *(const int*)a, y = *(const int*)b;
  return x < y ? -1 : x > y;
}

__attribute__((noinline)) static unsigned long Sort(unsigned seed) {
  int v[24];
  for (int i = 0; i < 24; ++i) v[i] = (int)rand_r(&seed);
  qsort(v, 24, sizeof(int), CompareInts);
  unsigned long s = 0;
  for (int i = 0; i < 24; ++i) s = s * 31 + (unsigned)v[i];
  KEEP_FRAME();
  return s;
}

__attribute__((noinline)) static unsigned long Clock(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  KEEP_FRAME();
  return (unsigned long)ts.tv_nsec;
}

__attribute__((noinline)) static unsigned long Work(unsigned round) {
  unsigned long s = Sort(round) ^ Clock();
  KEEP_FRAME();
  return s;
}

int main(void) {
  printf("ready\n");
  fflush(stdout);
  for (unsigned round = 1;; ++round) {
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
    sink += Work(round);
  }
}
