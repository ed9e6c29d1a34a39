// race_lib: the shared library unwindd_file_race_test rewrites under a
// process that maps it. RaceOuter -> RaceInner -> read() on a pipe nobody
// writes: the process waits in libc, never executing this library's code
// again, so truncating its file cannot kill it (only its unwinder's reads).
#include <unistd.h>

#define KEEP_FRAME() __asm__ volatile("" ::: "memory")

static volatile int race_forever = 1;

__attribute__((noipa)) static void RaceInner(int fd) {
  char c;
  while (race_forever) {
    if (read(fd, &c, 1) <= 0) continue;
  }
  KEEP_FRAME();
}

__attribute__((noipa, visibility("default"))) void RaceOuter(int fd) {
  RaceInner(fd);
  KEEP_FRAME();
}
