// Function names for frames, for `unwind pid|core|perf --symbols`: people at
// a terminal who would otherwise run eu-stack or gdb next to `unwind`. CLI
// only: the service stays symbol-free (docs/cores.md "Binaries from elsewhere").
//
//   Symbolizer sym({.locate = locate_options});
//   std::string s = sym.Symbolize({.file = "/usr/lib/.../libc.so.6"},
//                                 /*rel_pc=*/0x8ff16, /*return_address=*/true);
//   // "__GI___poll+0x4f"
//
// Names come from elfutils' libdwfl (dwfl_module_addrinfo), which reads the
// file's .symtab, else the separate debug file's, else MiniDebugInfo
// (.gnu_debugdata) together with .dynsym, the same way eu-stack does. The
// separate debug file is the one the unwinder already located, or one
// found with unwinder/locate's locators (build-id directories,
// .gnu_debuglink, debuginfod when configured, with its bounds and privacy
// rule): libdwfl's own debuginfod and path search are not used.
//
// Bounded: at most `max_modules` modules open at once (least recently used
// closed first) and `max_cached_addresses` answers kept per module. Not
// thread-safe (the CLI prints from one thread).
#ifndef UNWINDD_SERVICE_CLI_SYMBOLS_SYMBOLIZER_H_
#define UNWINDD_SERVICE_CLI_SYMBOLS_SYMBOLIZER_H_

#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "unwinder/locate/locator.h"

namespace unwindd::cli {

struct ModuleFiles {
  // The ELF file the unwinder used (its path on this machine, e.g. in the
  // debuginfod cache), or `image` for one held in memory (the vDSO).
  std::string file;
  std::shared_ptr<const std::vector<uint8_t>> image;
  // A separate debug file already located for it; "" to look for one.
  std::string debug_file;
  // The path the target recorded, for .gnu_debuglink's debug-directory
  // lookup; `file` when empty.
  std::string recorded_path;
};

class Symbolizer {
 public:
  struct Options {
    locate::LocateOptions locate;
    size_t max_modules = 64;
    size_t max_cached_addresses = size_t{1} << 16;
    bool demangle = true;  // C++ names as eu-stack prints them (no -r)
  };

  explicit Symbolizer(Options options);
  ~Symbolizer();
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;

  // "function+0xoff" for the module-relative PC `rel_pc` (the address in
  // the ELF file's own address space); "" when no symbol covers it or the
  // module cannot be read. `return_address`: rel_pc is a return address,
  // so the function is the one containing rel_pc - 1 (the call), while the
  // offset printed is rel_pc's, as eu-stack and gdb do.
  std::string Symbolize(const ModuleFiles& module, uint64_t rel_pc,
                        bool return_address);

  // Modules opened so far (for tests of the bound).
  size_t modules_opened() const { return opened_; }

  struct Module;

 private:
  Module* Get(const ModuleFiles& files);

  Options options_;
  std::string debuginfo_path_;  // libdwfl's search path: unused, kept empty
  std::list<std::unique_ptr<Module>> lru_;  // most recent first
  absl::flat_hash_map<std::string, std::list<std::unique_ptr<Module>>::iterator>
      by_key_;
  size_t opened_ = 0;
};

// `name` demangled if it is a mangled C++ name, else itself.
std::string Demangle(const std::string& name);

}  // namespace unwindd::cli

#endif  // UNWINDD_SERVICE_CLI_SYMBOLS_SYMBOLIZER_H_
