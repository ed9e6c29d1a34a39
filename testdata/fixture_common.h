// Shared by every fixture program in testdata/ (C and C++).
//
// A fixture starts its threads, each thread walks down to the call depth the
// tests care about and calls FixtureArrive() just before its blocking syscall;
// main waits for all of them with FixtureAnnounceWhenArrived(), prints
// "ready\n" and then blocks itself. The harness then polls /proc until every
// thread sits in a syscall (see harness/process.h), so the arrive/announce pair
// only has to say "everyone is about to block", not "everyone has blocked".
//
// Everything here is static so each variant (-O0/-O2/-O3, fp/nofp, pie/nopie)
// compiles its own copy with its own flags.
#ifndef UNWINDD_TESTDATA_FIXTURE_COMMON_H_
#define UNWINDD_TESTDATA_FIXTURE_COMMON_H_

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

// Keeps a call out of tail position and stops the compiler from merging or
// reordering memory accesses across it, so the caller's frame stays on the
// stack at every optimization level.
#define FIXTURE_KEEP_FRAME() __asm__ volatile("" ::: "memory")

static int fixture_arrived;

// Condition of the blocking loops: always true, but the compiler cannot know,
// so it neither treats the blocking functions as noreturn nor warns about
// "infinite recursion" in recursive callers. (realign.c wants noreturn calls
// and uses for (;;) instead.)
static volatile int fixture_forever = 1;

static inline void FixtureArrive(void) {
  __atomic_add_fetch(&fixture_arrived, 1, __ATOMIC_SEQ_CST);
}

// Waits (bounded: 10 s, so a broken fixture fails instead of hanging the
// harness, which has its own timeout too) until `count` threads arrived, then
// prints the ready line.
static inline void FixtureAnnounceWhenArrived(int count) {
  for (int i = 0; __atomic_load_n(&fixture_arrived, __ATOMIC_SEQ_CST) < count;
       ++i) {
    if (i > 10000) {
      fprintf(stderr, "fixture: only %d of %d threads arrived\n",
              __atomic_load_n(&fixture_arrived, __ATOMIC_SEQ_CST), count);
      exit(1);
    }
    usleep(1000);
  }
  fputs("ready\n", stdout);
  fflush(stdout);
}

// A pipe whose write end is kept open and never written: read() on it blocks
// forever (keeping the write end open is what prevents EOF).
static inline int FixtureDeadPipe(void) {
  int fds[2];
  if (pipe(fds) != 0) {
    perror("pipe");
    exit(1);
  }
  return fds[0];
}

#endif  // UNWINDD_TESTDATA_FIXTURE_COMMON_H_
