// race_host [LIB]: dlopens LIB (default: $RACE_LIB) (race_lib.c's library, copied by the test to a
// directory it rewrites), prints "ready" and parks in the library's
// RaceOuter -> RaceInner -> read() on a pipe nobody writes to.
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char** argv) {
  const char* path = argc == 2 ? argv[1] : getenv("RACE_LIB");
  if (path == NULL) return 2;
  void* lib = dlopen(path, RTLD_NOW);
  if (lib == NULL) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  void (*outer)(int) = (void (*)(int))dlsym(lib, "RaceOuter");
  if (outer == NULL) return 1;
  int p[2];
  if (pipe(p) != 0) return 1;
  printf("ready\n");
  fflush(stdout);
  outer(p[0]);
  return 0;
}
