// signal_handler: stacks that pass through the kernel's signal frame.
//
//   main     sigwaitinfo() on a signal nobody sends
//   selfkill pthread_kill(self, SIGUSR1) three frames deep; the SA_SIGINFO
//            handler calls two functions and blocks in read(). The stack
//            above the handler is __restore_rt, then the code that was in
//            pthread_kill's tgkill syscall when the signal arrived.
//   altstack sigaltstack + SA_ONSTACK handler for SIGUSR2 raised by the thread
//            itself; the handler blocks in pause() on the alternate stack,
//            so the unwinder must jump from the alt stack back to the thread
//            stack through the signal frame.
//   spinner  spins in a leaf function until main sends it SIGUSR1; the
//            interrupted PC is then an arbitrary instruction in the loop (not
//            a return address), which is what the "no -1 after a signal
//            frame" rule is for.
#include <pthread.h>
#include <signal.h>
#include <string.h>

#include "testdata/fixture_common.h"

static int dead_fd;
static pthread_t spinner_thread;
static volatile int spinner_started;
static volatile unsigned long spin_counter;

__attribute__((noinline)) static void HandlerReadForever(void) {
  char c;
  FixtureArrive();
  while (fixture_forever) {
    if (read(dead_fd, &c, 1) == 1) break;
  }
  FIXTURE_KEEP_FRAME();
}

__attribute__((noinline)) static void HandlerMiddle(int signo) {
  if (signo > 0) HandlerReadForever();
  FIXTURE_KEEP_FRAME();
}

static void OnUsr1(int signo, siginfo_t* info, void* ucontext) {
  (void)info;
  (void)ucontext;
  HandlerMiddle(signo);
  FIXTURE_KEEP_FRAME();
}

__attribute__((noinline)) static void PauseForever(void) {
  FixtureArrive();
  while (fixture_forever) pause();
}

__attribute__((noinline)) static void AltHandlerMiddle(void) {
  PauseForever();
  FIXTURE_KEEP_FRAME();
}

static void OnUsr2(int signo, siginfo_t* info, void* ucontext) {
  (void)signo;
  (void)info;
  (void)ucontext;
  AltHandlerMiddle();
  FIXTURE_KEEP_FRAME();
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

__attribute__((noinline)) static void KillSelf(int signo) {
  pthread_kill(pthread_self(), signo);
  FIXTURE_KEEP_FRAME();
}

__attribute__((noinline)) static void KillSelfMiddle(void) {
  KillSelf(SIGUSR1);
  FIXTURE_KEEP_FRAME();
}

static void* SelfKill(void* arg) {
  KillSelfMiddle();
  FIXTURE_KEEP_FRAME();
  return arg;
}

__attribute__((noinline)) static void RaiseOnAltStack(void) {
  stack_t ss;
  ss.ss_size = 64 * 1024;
  ss.ss_sp = malloc(ss.ss_size);
  ss.ss_flags = 0;
  if (ss.ss_sp == NULL || sigaltstack(&ss, NULL) != 0) exit(1);
  raise(SIGUSR2);
  FIXTURE_KEEP_FRAME();
}

static void* AltStack(void* arg) {
  RaiseOnAltStack();
  FIXTURE_KEEP_FRAME();
  return arg;
}

// A leaf with no calls: at -O2 it has no frame at all, so the CFA at the
// interrupted PC is rsp+8 and only the signal frame's saved rsp gets us here.
__attribute__((noinline)) static void Spin(void) {
  spinner_started = 1;
  while (fixture_forever) spin_counter = spin_counter + 1;
}

__attribute__((noinline)) static void SpinMiddle(void) {
  Spin();
  FIXTURE_KEEP_FRAME();
}

static void* Spinner(void* arg) {
  SpinMiddle();
  FIXTURE_KEEP_FRAME();
  return arg;
}

int main(void) {
  sigset_t never;
  siginfo_t info;
  pthread_t t;

  dead_fd = FixtureDeadPipe();
  Install(SIGUSR1, OnUsr1, 0);
  Install(SIGUSR2, OnUsr2, SA_ONSTACK);
  // Block the signal main waits for in every thread (the mask is inherited),
  // so nothing but sigwaitinfo could ever take it.
  sigemptyset(&never);
  sigaddset(&never, SIGRTMIN + 3);
  pthread_sigmask(SIG_BLOCK, &never, NULL);

  if (pthread_create(&t, NULL, SelfKill, NULL) != 0) return 1;
  if (pthread_create(&t, NULL, AltStack, NULL) != 0) return 1;
  if (pthread_create(&spinner_thread, NULL, Spinner, NULL) != 0) return 1;
  while (!spinner_started) usleep(1000);
  pthread_kill(spinner_thread, SIGUSR1);  // Lands in HandlerReadForever.

  FixtureAnnounceWhenArrived(3);
  while (fixture_forever) sigwaitinfo(&never, &info);
  return 0;
}
