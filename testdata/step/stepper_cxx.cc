// stepper_cxx: the C++ code testdata/step/every_instruction_test.cc
// single-steps through: a throw caught two frames up (libstdc++'s
// __cxa_throw and libgcc's unwinder running, with their own frames and
// epilogues, then the landing pads), a virtual call, std::sort with a
// lambda (libstdc++'s inlined and out-of-line helpers) and a std::string
// that a destructor frees.
//
// Prints "ready", then loops: a 1 ms sleep (where the test attaches) and
// one round of work, until killed.
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

volatile unsigned long sink;

struct Shape {
  virtual ~Shape() = default;
  virtual unsigned long Area(unsigned long x) const = 0;
};

struct Square : Shape {
  unsigned long Area(unsigned long x) const override { return x * x + sink; }
};

struct Oops : std::runtime_error {
  Oops() : std::runtime_error("oops") {}
};

__attribute__((noinline)) unsigned long Sort(unsigned seed) {
  std::vector<int> v(20);
  for (int& x : v) x = static_cast<int>(rand_r(&seed));
  std::sort(v.begin(), v.end(), [](int a, int b) { return (a ^ 7) < (b ^ 7); });
  return static_cast<unsigned long>(v[3]);
}

__attribute__((noinline)) unsigned long Thrower(unsigned round) {
  std::string name(40, static_cast<char>('a' + round % 26));  // destroyed on unwind
  if (round % 2 == 0) throw Oops();
  return name.size();
}

__attribute__((noinline)) unsigned long Middle(unsigned round, const Shape& s) {
  return Thrower(round) + s.Area(round);
}

__attribute__((noinline)) unsigned long Work(unsigned round, const Shape& s) {
  unsigned long r = Sort(round);
  try {
    r += Middle(round, s);
  } catch (const Oops&) {
    r ^= 1;
  }
  return r;
}

}  // namespace

int main() {
  std::printf("ready\n");
  std::fflush(stdout);
  Square square;
  const Shape* shape = &square;
  for (unsigned round = 1;; ++round) {
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, nullptr);
    sink += Work(round, *shape);
  }
}
