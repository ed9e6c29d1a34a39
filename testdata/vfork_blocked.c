// vfork_blocked: threads that ptrace cannot stop. main and a second
// thread each call vfork(), and the child sleeps: until it execs or exits,
// the thread that called vfork waits in the kernel uninterruptibly ("D"),
// where PTRACE_INTERRUPT does not reach it (eu-stack and gdb wait for it
// as long as that lasts). A third thread sleeps in nanosleep, as
// threads_c's do. (A tracer waits for the group leader and the other
// threads differently: both are here.)
//
//   main      vfork (D)      main -> VforkAndWait
//   forker    vfork (D)      Forker -> VforkAndWait
//   sleeper   nanosleep      Sleeper -> SleepForever
#include <pthread.h>
#include <signal.h>
#include <time.h>

#include "testdata/fixture_common.h"

// <sys/prctl.h> takes the kernel's headers, which -m32 builds lack here.
int prctl(int option, ...);
#define FIXTURE_PR_SET_PDEATHSIG 1

__attribute__((noinline)) static void SleepForever(void) {
  FixtureArrive();
  while (fixture_forever) {
    struct timespec ts = {1000000, 0};
    nanosleep(&ts, NULL);
  }
}

static void* Sleeper(void* arg) {
  SleepForever();
  FIXTURE_KEEP_FRAME();
  return arg;
}

__attribute__((noinline)) static void VforkAndWait(void) {
  const pid_t child = vfork();
  if (child == 0) {
    // The child shares the parent's memory until it exits: system calls
    // only. It dies with the parent.
    prctl(FIXTURE_PR_SET_PDEATHSIG, SIGKILL);
    for (;;) pause();
  }
  // The child was killed: the parent waits again, stoppable this time.
  while (fixture_forever) pause();
  FIXTURE_KEEP_FRAME();
}

static void* Forker(void* arg) {
  FixtureArrive();
  VforkAndWait();
  FIXTURE_KEEP_FRAME();
  return arg;
}

int main(void) {
  pthread_t t[2];
  if (pthread_create(&t[0], NULL, Sleeper, NULL) != 0) return 1;
  if (pthread_create(&t[1], NULL, Forker, NULL) != 0) return 1;
  FixtureAnnounceWhenArrived(2);
  VforkAndWait();
  FIXTURE_KEEP_FRAME();
  return 0;
}
