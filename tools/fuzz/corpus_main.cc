// Replays fuzz inputs through LLVMFuzzerTestOneInput without libFuzzer: the
// regression test of every fuzz target (its committed corpus, in the normal
// gcc test suite), and a way to rerun one crashing input under a debugger.
//
//   corpus_main DIR_OR_FILE...
//
// Every regular file under each argument (recursively, in name order) is
// one input. Exits 1 if an argument cannot be read or holds no input, so a
// misplaced corpus cannot pass as an empty one. Prints the number of inputs
// and the slowest one.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv)
    __attribute__((weak));

namespace {

bool CollectInputs(const std::string& arg, std::vector<std::string>& out) {
  std::error_code ec;
  const std::filesystem::path p(arg);
  if (std::filesystem::is_regular_file(p, ec)) {
    out.push_back(arg);
    return true;
  }
  if (!std::filesystem::is_directory(p, ec)) {
    std::fprintf(stderr, "%s: not a file or directory\n", arg.c_str());
    return false;
  }
  std::vector<std::string> found;
  for (auto it = std::filesystem::recursive_directory_iterator(p, ec);
       !ec && it != std::filesystem::recursive_directory_iterator();
       it.increment(ec)) {
    if (it->is_regular_file(ec)) found.push_back(it->path().string());
  }
  if (ec) {
    std::fprintf(stderr, "%s: %s\n", arg.c_str(), ec.message().c_str());
    return false;
  }
  std::sort(found.begin(), found.end());
  out.insert(out.end(), found.begin(), found.end());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (LLVMFuzzerInitialize != nullptr) LLVMFuzzerInitialize(&argc, &argv);
  std::vector<std::string> inputs;
  for (int i = 1; i < argc; ++i) {
    if (argv[i][0] == '-') continue;  // libFuzzer flags: ignored here
    if (!CollectInputs(argv[i], inputs)) return 1;
  }
  if (inputs.empty()) {
    std::fprintf(stderr, "usage: %s DIR_OR_FILE... (no input found)\n",
                 argv[0]);
    return 1;
  }
  double slowest_s = 0;
  std::string slowest;
  for (const std::string& path : inputs) {
    std::ifstream f(path, std::ios::binary);
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)),
                                     std::istreambuf_iterator<char>());
    if (!f.good() && !f.eof()) {
      std::fprintf(stderr, "%s: cannot read\n", path.c_str());
      return 1;
    }
    const auto start = std::chrono::steady_clock::now();
    LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
    const double s = std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - start)
                         .count();
    if (s > slowest_s) {
      slowest_s = s;
      slowest = path;
    }
  }
  std::printf("%zu inputs passed; slowest %.3f s (%s)\n", inputs.size(),
              slowest_s, slowest.c_str());
  return 0;
}
