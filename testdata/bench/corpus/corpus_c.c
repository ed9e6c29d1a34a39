// corpus_c: a CPU-bound C program for the benchmark corpus of recordings
// (testdata/bench/compare.sh, section "corpus"), whose shape is set on its
// command line so that one source gives recordings of many shapes:
//
//   corpus_c THREADS DEPTH_LO DEPTH_HI FRAME_BYTES [qsort]
//
// Each of THREADS threads loops: it recurses to a depth drawn from
// [DEPTH_LO, DEPTH_HI] through functions whose frames hold FRAME_BYTES of
// locals (16, 256 or 2048: three functions, so that the frame size is the
// compiler's and not a variable-length array's), and at the bottom either
// computes or, with "qsort", sorts through libc's qsort and a comparator
// (libc's own frames and callbacks). Prints "ready" once every thread
// runs, then runs until killed.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEEP_FRAME() __asm__ volatile("" ::: "memory")

static int depth_lo, depth_hi, frame_bytes, use_qsort;
static volatile unsigned long sink;
static int started;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static int CompareInts(const void* a, const void* b) {
  int x = *(const int*)a, y = *(const int*)b;
  return x < y ? -1 : x > y;
}

__attribute__((noipa)) static unsigned long Bottom(unsigned* seed) {
  if (use_qsort) {
    int v[256];
    for (int i = 0; i < 256; ++i) v[i] = (int)rand_r(seed);
    qsort(v, 256, sizeof(int), CompareInts);
    return (unsigned long)v[17];
  }
  unsigned long x = *seed;
  for (int i = 0; i < 4000; ++i) x = x * 6364136223846793005UL + 1442695040888963407UL;
  return x;
}

// One function per frame size; each touches its locals so they stay.
#define RECURSE_FN(name, bytes)                                            \
  __attribute__((noipa)) static unsigned long name(int depth, unsigned* seed) { \
    volatile unsigned char pad[bytes];                                      \
    pad[0] = (unsigned char)depth;                                          \
    pad[bytes - 1] = (unsigned char)(depth >> 1);                           \
    unsigned long r = depth <= 0 ? Bottom(seed) : name(depth - 1, seed);   \
    KEEP_FRAME();                                                           \
    return r ^ pad[0] ^ pad[bytes - 1];                                     \
  }
RECURSE_FN(RecurseSmall, 16)
RECURSE_FN(RecurseMedium, 256)
RECURSE_FN(RecurseLarge, 2048)

static void* Run(void* arg) {
  unsigned seed = (unsigned)(unsigned long)arg * 2654435761u + 1;
  pthread_mutex_lock(&mu);
  ++started;
  pthread_mutex_unlock(&mu);
  for (;;) {
    const int span = depth_hi - depth_lo + 1;
    const int depth = depth_lo + (int)(rand_r(&seed) % (unsigned)span);
    unsigned long r;
    if (frame_bytes >= 2048) {
      r = RecurseLarge(depth, &seed);
    } else if (frame_bytes >= 256) {
      r = RecurseMedium(depth, &seed);
    } else {
      r = RecurseSmall(depth, &seed);
    }
    sink += r;
  }
  return NULL;
}

int main(int argc, char** argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: corpus_c THREADS DEPTH_LO DEPTH_HI FRAME_BYTES [qsort]\n");
    return 2;
  }
  const int threads = atoi(argv[1]);
  depth_lo = atoi(argv[2]);
  depth_hi = atoi(argv[3]);
  frame_bytes = atoi(argv[4]);
  use_qsort = argc > 5 && strcmp(argv[5], "qsort") == 0;
  if (threads < 1 || threads > 256 || depth_lo < 0 || depth_hi < depth_lo) return 2;
  for (int i = 1; i < threads; ++i) {
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 8 << 20);
    pthread_create(&t, &attr, Run, (void*)(unsigned long)i);
  }
  for (;;) {
    pthread_mutex_lock(&mu);
    const int n = started;
    pthread_mutex_unlock(&mu);
    if (n == threads - 1) break;
  }
  printf("ready\n");
  fflush(stdout);
  Run((void*)0);
}
