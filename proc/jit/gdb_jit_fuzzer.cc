// libFuzzer target: the GDB JIT interface as `unwind pid|core` walks it
// (gdb_jit.h): the descriptor, the entry list (cycles, length, unreadable
// entries), each symfile read from memory and made into modules
// (symfile.h: the ELF object's sections and symbols, .eh_frame relocation
// or its live copy, the image), and the regions laid over a mapping.
//
// Input layout: u8 flags (bit 0: 32-bit pointers; bit 1: tight limits;
// bit 2: also parse the rest as one symfile directly), then the target's
// memory from kBase on; the descriptor is at kBase. Addresses outside it
// are unreadable.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "memory/factories.h"
#include "proc/jit/gdb_jit.h"
#include "proc/jit/symfile.h"
#include "tools/fuzz/fuzz_input.h"

namespace unwindd::proc::jit {
namespace {

constexpr uint64_t kBase = 0x10000;

void Run(const uint8_t* data, size_t size) {
  fuzz::FuzzInput in(data, size);
  const uint8_t flags = in.U8();
  const absl::Span<const uint8_t> rest = in.Rest();
  std::unique_ptr<memory::Memory> mem =
      memory::CreateBufferMemory(kBase, std::vector<uint8_t>(rest.begin(), rest.end()));
  GdbJitLimits limits;
  if (flags & 2) {
    limits.max_entries = 16;
    limits.max_symfile_bytes = 4096;
    limits.max_total_bytes = 16384;
  }
  if (flags & 4) SymfileRegions(rest, kBase, *mem).IgnoreError();
  absl::StatusOr<GdbJitList> list = ReadGdbJitList(*mem, kBase, (flags & 1) ? 4 : 8, limits);
  if (!list.ok()) return;
  if (list->entries.size() > limits.max_entries) __builtin_trap();
  std::vector<std::string> warnings;
  std::vector<JitRegion> regions = GdbJitRegions(*mem, *list, limits, &warnings);
  if (warnings.size() > 5) __builtin_trap();  // one line per kind
  for (const JitRegion& r : regions) {
    if (r.mapping.start >= r.mapping.end || r.code == nullptr || r.code->elf == nullptr) {
      __builtin_trap();
    }
  }
  Mapping anon;
  anon.start = 0;
  anon.end = ~uint64_t{0};
  anon.read = anon.exec = true;
  LayOver({anon}, regions);
}

}  // namespace
}  // namespace unwindd::proc::jit

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  unwindd::proc::jit::Run(data, size);
  return 0;
}
