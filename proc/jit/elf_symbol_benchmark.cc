// What looking for __jit_debug_descriptor costs `unwind pid|core` per
// mapped file (FindElfSymbol: open, section headers, .gnu.hash lookup in
// .dynsym, .symtab scan), over the files given:
//
//   bazel run -c opt //proc/jit:elf_symbol_benchmark -- /usr/lib/x86_64-linux-gnu/*.so*
#include <chrono>
#include <cstdio>
#include <string>

#include "proc/jit/elf_symbol.h"

int main(int argc, char** argv) {
  for (int round = 0; round < 2; ++round) {  // the first warms the page cache
    int files = 0, found = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 1; i < argc; ++i) {
      absl::StatusOr<std::optional<unwindd::proc::jit::ElfSymbol>> s =
          unwindd::proc::jit::FindElfSymbol(argv[i], "__jit_debug_descriptor");
      files += s.ok();
      found += s.ok() && s->has_value();
    }
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::printf("round %d: %d files in %.1f ms (%.1f us a file), %d define it\n", round, files, ms,
                files ? 1000 * ms / files : 0.0, found);
  }
  return 0;
}
