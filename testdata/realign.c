// realign: frames whose CFA cannot be expressed as "rsp + constant".
//
//   main      AlignedAndVla(): a 64-byte-aligned local plus a VLA (DRAP
//             again, with `and $-64`), then pause()
//   drap      ForceAligned(): __attribute__((force_align_arg_pointer)) plus a
//             VLA makes gcc realign through a DRAP register (r10): `lea
//             8(%rsp),%r10; and $-16,%rsp; push -8(%r10)`, and describe the
//             CFA with DW_CFA_def_cfa_expression (deref rbp-8) in the body.
//             Then nanosleep.
//   aligned   Aligned64(): `and $-64,%rsp` for a local with aligned(64); the
//             CFA is then rbp-based even at -fomit-frame-pointer. Then
//             read() on a dead pipe.
//   vla       Vla() -> Alloca(): runtime-sized stack allocations, so rsp moves
//             by an amount only known at run time, then poll()
//
// Each realigning function is an intermediate frame: it calls down to the
// blocking function, so unwinding has to go *through* it. The blocking
// functions loop forever, so at -O2 gcc treats calls to them as noreturn and
// puts nothing after the call: the return address can be the first byte past
// the caller's code (and its FDE), which only a lookup at pc-1 gets right.
#include <alloca.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "testdata/fixture_common.h"

static int dead_fd;
// Runtime sizes the compiler cannot see through.
static volatile int vla_size = 100;
static volatile int alloca_size = 333;

__attribute__((noinline)) static void Consume(volatile char* p, int n) {
  p[0] = 1;
  p[n - 1] = 2;
}

__attribute__((noinline)) static void SleepForever(void) {
  FixtureArrive();
  for (;;) {
    struct timespec ts = {1000000, 0};
    nanosleep(&ts, NULL);
  }
}

// Realigning alone only gives an rbp-based CFA (`push %rbp; mov %rsp,%rbp;
// and $-16,%rsp`); adding a runtime-sized allocation is what makes gcc keep
// the incoming stack pointer in a DRAP register.
__attribute__((noinline, force_align_arg_pointer)) static void ForceAligned(
    int n) {
  volatile char buf[n];
  Consume(buf, n);
  SleepForever();
  FIXTURE_KEEP_FRAME();
}

static void* DrapThread(void* arg) {
  ForceAligned(vla_size);
  FIXTURE_KEEP_FRAME();
  return arg;
}

__attribute__((noinline)) static void ReadForever(void) {
  char c;
  FixtureArrive();
  for (;;) {
    if (read(dead_fd, &c, 1) == 1) break;
  }
  FIXTURE_KEEP_FRAME();
}

__attribute__((noinline)) static void Aligned64(void) {
  volatile char buf[64] __attribute__((aligned(64)));
  Consume(buf, sizeof(buf));
  ReadForever();
  FIXTURE_KEEP_FRAME();
}

static void* AlignedThread(void* arg) {
  Aligned64();
  FIXTURE_KEEP_FRAME();
  return arg;
}

__attribute__((noinline)) static void PollForever(void) {
  struct pollfd pfd = {dead_fd, POLLIN, 0};
  FixtureArrive();
  for (;;) poll(&pfd, 1, -1);
}

__attribute__((noinline)) static void Alloca(int n) {
  volatile char* p = alloca(n);
  Consume(p, n);
  PollForever();
  FIXTURE_KEEP_FRAME();
}

__attribute__((noinline)) static void Vla(int n) {
  volatile char vla[n];
  Consume(vla, n);
  Alloca(alloca_size);
  FIXTURE_KEEP_FRAME();
}

static void* VlaThread(void* arg) {
  Vla(vla_size);
  FIXTURE_KEEP_FRAME();
  return arg;
}

__attribute__((noinline)) static void PauseForever(void) {
  for (;;) pause();
}

__attribute__((noinline)) static void AlignedAndVla(int n) {
  volatile char aligned[128] __attribute__((aligned(64)));
  volatile char vla[n];
  Consume(aligned, sizeof(aligned));
  Consume(vla, n);
  PauseForever();
  FIXTURE_KEEP_FRAME();
}

int main(void) {
  pthread_t t;
  dead_fd = FixtureDeadPipe();
  if (pthread_create(&t, NULL, DrapThread, NULL) != 0) return 1;
  if (pthread_create(&t, NULL, AlignedThread, NULL) != 0) return 1;
  if (pthread_create(&t, NULL, VlaThread, NULL) != 0) return 1;
  FixtureAnnounceWhenArrived(3);
  AlignedAndVla(vla_size);
  return 0;
}
