// The GDB JIT interface (gdb manual, "JIT Compilation Interface"): a
// runtime that generates code keeps a list of in-memory ELF objects
// ("symfiles") describing it, headed by the global
//
//   struct jit_descriptor {            // 64-bit      i386
//     uint32_t version;                // 0           0      (1)
//     uint32_t action_flag;            // 4           4
//     struct jit_code_entry* relevant_entry;  // 8    8
//     struct jit_code_entry* first_entry;     // 16   12
//   } __jit_debug_descriptor;
//   struct jit_code_entry {
//     struct jit_code_entry* next;     // 0           0
//     struct jit_code_entry* prev;     // 8           4
//     const char* symfile_addr;        // 16          8
//     uint64_t symfile_size;           // 24          12
//   };
//
// LLVM (lli, ORC, MCJIT), V8 --gdbjit, Mono, Julia, wasmtime and others
// register their code this way; gdb reads it to name and unwind JIT frames.
// Here, for a live process or a core, the descriptor is found by its
// symbol in the target's modules (.dynsym through .gnu.hash, else .symtab),
// the list is walked and each symfile read from the target's memory and
// made into modules (symfile.h).
//
//   std::vector<JitRegion> r = FindGdbJitCode(target, &warnings);
//   std::unique_ptr<Target> t = WithJitCode(target, std::move(r));
//
// The list is in memory the target controls: its length is bounded, a
// cycle ends it, each symfile's size and the bytes read in all are bounded;
// a bad list is a warning and what was read before it, never a crash.
#ifndef UNWINDD_PROC_JIT_GDB_JIT_H_
#define UNWINDD_PROC_JIT_GDB_JIT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "memory/memory.h"
#include "proc/jit/jit_code.h"
#include "proc/target.h"

namespace unwindd::proc::jit {

inline constexpr char kGdbJitDescriptorSymbol[] = "__jit_debug_descriptor";

struct GdbJitLimits {
  size_t max_entries = 65536;
  uint64_t max_symfile_bytes = uint64_t{64} << 20;
  // Symfiles read, and module images built, in all.
  uint64_t max_total_bytes = uint64_t{512} << 20;
};

struct GdbJitEntry {
  uint64_t addr = 0;  // of the jit_code_entry
  uint64_t symfile_addr = 0;
  uint64_t symfile_size = 0;
};

struct GdbJitList {
  uint32_t version = 0;
  uint32_t action_flag = 0;
  uint64_t relevant_entry = 0;
  uint64_t first_entry = 0;
  std::vector<GdbJitEntry> entries;  // in list order
  // Why the walk ended before a null `next` ("" if it did not): a cycle,
  // the length bound, an unreadable entry.
  std::string cut;
};

// The descriptor at `descriptor` and its list, for a target whose pointers
// are `word_size` (4 or 8) bytes. OutOfRange if the descriptor cannot be
// read, Unimplemented for a version other than 1.
absl::StatusOr<GdbJitList> ReadGdbJitList(memory::Memory& mem, uint64_t descriptor,
                                          int word_size, const GdbJitLimits& limits = {});

// The list's symfiles made into modules (symfile.h), in list order; those
// that cannot be read or used are summed up in `warnings` (a few lines,
// whatever the list's length). `total` (may be null) carries the bytes read
// across calls against limits.max_total_bytes.
std::vector<JitRegion> GdbJitRegions(memory::Memory& mem, const GdbJitList& list,
                                     const GdbJitLimits& limits, std::vector<std::string>* warnings,
                                     uint64_t* total = nullptr);

// Where `target`'s modules define __jit_debug_descriptor (target
// addresses), each module's ELF file opened through the target's file
// candidates. A runtime may define it more than once (two JIT libraries).
std::vector<uint64_t> FindGdbJitDescriptors(const Target& target);

// All of it: the descriptors, their lists, the modules.
std::vector<JitRegion> FindGdbJitCode(Target& target, std::vector<std::string>* warnings,
                                      const GdbJitLimits& limits = {});

}  // namespace unwindd::proc::jit

#endif  // UNWINDD_PROC_JIT_GDB_JIT_H_
