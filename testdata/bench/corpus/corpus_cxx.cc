// corpus_cxx: a CPU-bound C++ program for the benchmark corpus
// (compare.sh, section "corpus"): exceptions thrown from the bottom of a
// recursion and caught some frames up (libgcc's unwinder and the
// personality routine on the stack), std::sort with a lambda, and
// std::map inserts (libstdc++'s own frames), on THREADS threads.
//
//   corpus_cxx THREADS DEPTH
//
// Prints "ready" once every thread runs, then runs until killed.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

std::atomic<int> started{0};
std::atomic<unsigned long> sink{0};

struct Thrown : std::runtime_error {
  explicit Thrown(int d) : std::runtime_error("thrown"), depth(d) {}
  int depth;
};

__attribute__((noipa)) unsigned long Work(unsigned* seed) {
  std::vector<int> v(512);
  for (int& x : v) x = static_cast<int>(rand_r(seed));
  std::sort(v.begin(), v.end(), [](int a, int b) { return (a ^ 0x55) < (b ^ 0x55); });
  std::map<int, int> m;
  for (int i = 0; i < 64; ++i) m[v[i]] = i;
  if (rand_r(seed) % 4 == 0) throw Thrown(static_cast<int>(m.size()));
  return static_cast<unsigned long>(v[3]) + m.size();
}

__attribute__((noipa)) unsigned long Recurse(int depth, unsigned* seed) {
  std::string local(24, static_cast<char>('a' + depth % 26));  // a destructor to run
  if (depth == 0) return Work(seed) + local.size();
  if (depth % 5 == 0) {
    try {
      return Recurse(depth - 1, seed) + local.size();
    } catch (const Thrown& t) {
      return static_cast<unsigned long>(t.depth);
    }
  }
  return Recurse(depth - 1, seed) ^ local[0];
}

void Run(int id, int depth) {
  unsigned seed = static_cast<unsigned>(id) * 2654435761u + 7;
  started++;
  for (;;) {
    try {
      sink += Recurse(depth, &seed);
    } catch (const Thrown&) {
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: corpus_cxx THREADS DEPTH\n");
    return 2;
  }
  const int threads = std::atoi(argv[1]);
  const int depth = std::atoi(argv[2]);
  if (threads < 1 || threads > 256 || depth < 0 || depth > 10000) return 2;
  for (int i = 1; i < threads; ++i) std::thread(Run, i, depth).detach();
  while (started.load() != threads - 1) {
  }
  std::printf("ready\n");
  std::fflush(stdout);
  Run(0, depth);
}
