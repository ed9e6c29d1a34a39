// crasher: the program behind the crash-pipeline tests (systemd-coredump
// entries, crash signatures, package notes). Linked with an ELF package
// note (BUILD.bazel: ld's --package-metadata, systemd's
// docs/ELF_PACKAGE_METADATA.md).
//
//   main     Outer -> Middle -> WaitForever: pause(); on SIGUSR1 its
//            handler calls down two frames and stores through a null
//            pointer: SIGSEGV (SEGV_MAPERR at 0) on the main thread, whose
//            stack then runs through the kernel's signal frame back into
//            pause(), so the crash's top frames are ours at fixed offsets
//            in this file whatever the load addresses;
//   reader   read() on a dead pipe, two frames of ours down.
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "testdata/fixture_common.h"

static int dead_fd;
static volatile int* volatile null_pointer;

__attribute__((noinline)) static void Store(int v) {
  *null_pointer = v;
  FIXTURE_KEEP_FRAME();
}

__attribute__((noinline)) static void HandlerMiddle(int signo) {
  Store(signo);
  FIXTURE_KEEP_FRAME();
}

static void OnUsr1(int signo) {
  HandlerMiddle(signo);
  FIXTURE_KEEP_FRAME();
}

__attribute__((noinline)) static void WaitForever(void) {
  FixtureArrive();
  while (fixture_forever) pause();
}

__attribute__((noinline)) static void Middle(void) {
  WaitForever();
  FIXTURE_KEEP_FRAME();
}

__attribute__((noinline)) static void Outer(void) {
  Middle();
  FIXTURE_KEEP_FRAME();
}

__attribute__((noinline)) static void ReadForever(void) {
  char c;
  FixtureArrive();
  while (fixture_forever) {
    if (read(dead_fd, &c, 1) < 0) break;
  }
}

static void* Reader(void* arg) {
  ReadForever();
  FIXTURE_KEEP_FRAME();
  return arg;
}

int main(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = OnUsr1;
  sigaction(SIGUSR1, &sa, NULL);
  dead_fd = FixtureDeadPipe();
  pthread_t reader;
  if (pthread_create(&reader, NULL, Reader, NULL) != 0) return 1;
  FixtureAnnounceWhenArrived(1);
  Outer();
  return 0;
}
