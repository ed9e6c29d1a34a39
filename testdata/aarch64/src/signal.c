// aarch64 signal: stacks that pass through the signal frame qemu-user (like
// the kernel) builds, returning to the `mov x8, #139; svc #0` trampoline.
//
//   main      SIGSEGV in FixtureCrash (see fixture.h)
//   selfkill  pthread_kill(self, SIGUSR1) two frames deep; the SA_SIGINFO
//             handler calls two functions and blocks in read()
//   altstack  sigaltstack + SA_ONSTACK handler for SIGUSR2 raised by the
//             thread itself; the handler blocks in pause() on the alternate
//             stack, so the walk jumps back to the thread stack
#include <signal.h>
#include <string.h>

#include "fixture.h"

static int dead_fd;

NOINLINE static void HandlerReadForever(void) {
  char c;
  FixtureArrive();
  while (fixture_forever) {
    if (read(dead_fd, &c, 1) == 1) break;
  }
  KEEP_FRAME();
}

NOINLINE static void HandlerMiddle(int signo) {
  if (signo > 0) HandlerReadForever();
  KEEP_FRAME();
}

static void OnUsr1(int signo, siginfo_t* info, void* ucontext) {
  (void)info;
  (void)ucontext;
  HandlerMiddle(signo);
  KEEP_FRAME();
}

NOINLINE static void PauseForever(void) {
  FixtureArrive();
  while (fixture_forever) pause();
}

NOINLINE static void AltHandlerMiddle(void) {
  PauseForever();
  KEEP_FRAME();
}

static void OnUsr2(int signo, siginfo_t* info, void* ucontext) {
  (void)signo;
  (void)info;
  (void)ucontext;
  AltHandlerMiddle();
  KEEP_FRAME();
}

static void Install(int signo, void (*handler)(int, siginfo_t*, void*),
                    int extra_flags) {
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_sigaction = handler;
  sa.sa_flags = SA_SIGINFO | extra_flags;
  sigemptyset(&sa.sa_mask);
  if (sigaction(signo, &sa, NULL) != 0) exit(1);
}

NOINLINE static void KillSelf(int signo) {
  pthread_kill(pthread_self(), signo);
  KEEP_FRAME();
}

NOINLINE static void KillSelfMiddle(void) {
  KillSelf(SIGUSR1);
  KEEP_FRAME();
}

static void* SelfKill(void* arg) {
  KillSelfMiddle();
  KEEP_FRAME();
  return arg;
}

// Static, not malloc'ed: a thread's first malloc makes glibc map a 64 MiB
// arena, which qemu-user places differently from run to run.
static char alt_stack[16 * 1024] __attribute__((aligned(16)));

NOINLINE static void RaiseOnAltStack(void) {
  stack_t ss;
  ss.ss_size = sizeof(alt_stack);
  ss.ss_sp = alt_stack;
  ss.ss_flags = 0;
  if (sigaltstack(&ss, NULL) != 0) exit(1);
  raise(SIGUSR2);
  KEEP_FRAME();
}

static void* AltStack(void* arg) {
  RaiseOnAltStack();
  KEEP_FRAME();
  return arg;
}

int main(void) {
  dead_fd = FixtureDeadPipe();
  Install(SIGUSR1, OnUsr1, 0);
  Install(SIGUSR2, OnUsr2, SA_ONSTACK);
  FixtureStart(SelfKill);
  FixtureStart(AltStack);
  FixtureCrashWhenArrived(2);
  return 0;
}
