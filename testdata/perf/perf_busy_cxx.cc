// perf_busy_cxx: the C++ counterpart of perf_busy.c for `perf record -e
// cpu-clock --call-graph dwarf` (issue 13): samples in libstdc++ and
// through C++ constructs — std::sort with a lambda comparator (inlined
// template code in the program, callbacks through std::function),
// virtual calls, and exceptions thrown and caught in a loop (libgcc's
// unwinder and libstdc++'s personality routine running on the stack
// being sampled) — on several std::threads.
//
// Prints "ready" once every thread runs, then runs until killed.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

std::atomic<int> started{0};
volatile unsigned long sink;

#define KEEP_FRAME() __asm__ volatile("" ::: "memory")

__attribute__((noinline)) void SortLoop() {
  std::vector<unsigned> v(4096);
  unsigned seed = 1;
  const std::function<bool(unsigned, unsigned)> less = [](unsigned a, unsigned b) {
    return (a ^ 0x5555u) < (b ^ 0x5555u);
  };
  for (;;) {
    for (unsigned& x : v) x = seed = seed * 1103515245u + 12345u;
    std::sort(v.begin(), v.end(), less);
    sink = sink + v[7];
  }
}

struct Shape {
  virtual ~Shape() = default;
  virtual unsigned long Work(unsigned long x) const = 0;
};
struct Square : Shape {
  __attribute__((noinline)) unsigned long Work(unsigned long x) const override {
    for (int i = 0; i < 500; ++i) x = x * x + 7;
    KEEP_FRAME();
    return x;
  }
};
struct Circle : Shape {
  __attribute__((noinline)) unsigned long Work(unsigned long x) const override {
    for (int i = 0; i < 700; ++i) x = (x >> 3) ^ (x * 31);
    KEEP_FRAME();
    return x;
  }
};

__attribute__((noinline)) void VirtualLoop() {
  std::vector<std::unique_ptr<Shape>> shapes;
  shapes.push_back(std::make_unique<Square>());
  shapes.push_back(std::make_unique<Circle>());
  unsigned long x = 1;
  for (unsigned i = 0;; ++i) x = shapes[i & 1]->Work(x);
}

__attribute__((noinline)) void Thrower(int depth) {
  if (depth == 0) throw std::runtime_error("deep");
  Thrower(depth - 1);
  KEEP_FRAME();
}

__attribute__((noinline)) void ExceptionLoop() {
  for (;;) {
    try {
      Thrower(12);
    } catch (const std::exception& e) {
      sink = sink + e.what()[0];
    }
  }
}

void Run(void (*body)()) {
  started.fetch_add(1);
  body();
}

}  // namespace

int main() {
  std::vector<std::thread> threads;
  for (void (*body)() : {SortLoop, VirtualLoop, ExceptionLoop}) {
    threads.emplace_back(Run, body);
  }
  while (started.load() < 3) std::this_thread::yield();
  std::printf("ready\n");
  std::fflush(stdout);
  for (std::thread& t : threads) t.join();
  return 0;
}
