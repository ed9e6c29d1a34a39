// Shared by the aarch64 fixture programs (make_fixtures.sh builds them with
// aarch64-linux-gnu-gcc and runs them under qemu-aarch64-static).
//
// Each program parks its threads in blocking syscalls at known call depths,
// waits until all of them have arrived, then crashes in main (a store to
// address 0, two frames deep) so that qemu-user writes a core. Threads get
// small stacks: qemu dumps every readable mapping whole, and glibc's default
// 8 MiB thread stacks would make the committed cores needlessly large.
#ifndef UNWINDD_TESTDATA_AARCH64_SRC_FIXTURE_H_
#define UNWINDD_TESTDATA_AARCH64_SRC_FIXTURE_H_

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

// Keeps a call out of tail position, so the caller's frame stays.
#define KEEP_FRAME() __asm__ volatile("" ::: "memory")
#define NOINLINE __attribute__((noinline))

static int fixture_arrived;
static volatile int fixture_forever = 1;
static int* volatile fixture_null;  // the crash address: always 0

static inline void FixtureArrive(void) {
  __atomic_add_fetch(&fixture_arrived, 1, __ATOMIC_SEQ_CST);
}

static inline int FixtureDeadPipe(void) {
  int fds[2];
  if (pipe(fds) != 0) exit(1);
  return fds[0];  // the write end stays open: reads block forever
}

static inline void FixtureStart(void* (*body)(void*)) {
  pthread_attr_t attr;
  pthread_t t;
  pthread_attr_init(&attr);
  // aarch64's PTHREAD_STACK_MIN (64K pages): anything smaller is refused.
  if (pthread_attr_setstacksize(&attr, 128 * 1024) != 0) exit(1);
  if (pthread_create(&t, &attr, body, NULL) != 0) exit(1);
  pthread_attr_destroy(&attr);
}

NOINLINE static void FixtureCrash(int value) {
  *fixture_null = value;  // SIGSEGV: qemu writes qemu_<prog>_<date>_<pid>.core
  KEEP_FRAME();
}

NOINLINE static void FixtureCrashMiddle(int value) {
  FixtureCrash(value + 1);
  KEEP_FRAME();
}

// Waits (bounded) for `count` threads, lets them enter their syscalls, and
// crashes.
static inline void FixtureCrashWhenArrived(int count) {
  for (int i = 0; __atomic_load_n(&fixture_arrived, __ATOMIC_SEQ_CST) < count;
       ++i) {
    if (i > 10000) exit(1);
    usleep(1000);
  }
  usleep(200 * 1000);
  FixtureCrashMiddle(1);
}

#endif  // UNWINDD_TESTDATA_AARCH64_SRC_FIXTURE_H_
