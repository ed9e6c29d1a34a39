// vfork_blocked: a thread that ptrace cannot stop. main calls vfork(), and
// its child sleeps: until the child execs or exits the parent waits in
// the kernel uninterruptibly ("D"), where PTRACE_INTERRUPT does not reach
// it (eu-stack and gdb wait for it as long as that lasts). A second thread
// sleeps in nanosleep, as threads_c's do.
//
//   main      vfork (D)      main -> VforkAndWait
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

int main(void) {
  pthread_t t;
  if (pthread_create(&t, NULL, Sleeper, NULL) != 0) return 1;
  FixtureAnnounceWhenArrived(1);
  VforkAndWait();
  FIXTURE_KEEP_FRAME();
  return 0;
}
