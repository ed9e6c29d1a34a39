// A GDB JIT interface "symfile" (an in-memory ELF object a runtime
// registered through __jit_debug_descriptor; gdb_jit.h) made into modules:
// an ELF image the unwinder opens like a file, and one mapping per piece of
// its code, named after the object's function symbols.
//
//   absl::StatusOr<SymfileCode> c = SymfileRegions(bytes, 0x3df83d10, mem);
//   for (JitRegion& r : c->regions) ...   // "jit-symfile-0x3df83d10", "fib"
//
// The symfile says where its sections were loaded in the target by their
// sh_addr (LLVM's RuntimeDyld and JITLink patch the section headers of the
// copy they register; V8 and others write them so). For an ET_REL object,
// such as Debian's lli-14 registers, the .eh_frame bytes in the file are
// not relocated; they are made usable for the load addresses either
//   - by applying .rela.eh_frame (.rel.eh_frame on i386) to the file's
//     bytes, symbols being section load address + st_value, or
//   - from the target's memory at the section's sh_addr, where the JIT
//     linker put the relocated copy (used when the relocations cannot all
//     be applied: they name undefined symbols or unknown types), if those
//     bytes agree with the file's outside the relocated fields.
//
// The image (target addresses = image addresses: load bias 0):
//   ELF header, one PT_LOAD (R+X) per executable section at its sh_addr
//   with the code read from the target (the file's unrelocated bytes when
//   the target's are unreadable), each from a page-aligned file offset;
//   .eh_frame at its sh_addr; section headers.
// A frame's module-relative PC is therefore its target address, as gdb
// prints it. Everything in the symfile is hostile: sizes, offsets, counts,
// relocation fields are checked and bounded; a symfile that cannot be used
// is an error, never a crash.
#ifndef UNWINDD_PROC_JIT_SYMFILE_H_
#define UNWINDD_PROC_JIT_SYMFILE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "memory/memory.h"
#include "proc/jit/jit_code.h"

namespace unwindd::proc::jit {

// Bounds on what one symfile may make us hold.
inline constexpr size_t kMaxSymfileSections = 4096;
inline constexpr size_t kMaxSymfileCodeSections = 256;
inline constexpr uint64_t kMaxSymfileCodeBytes = uint64_t{64} << 20;
inline constexpr size_t kMaxSymfileNamedFunctions = 4096;
inline constexpr size_t kMaxSymfileRelocations = size_t{1} << 20;

// Where a symfile's .eh_frame came from.
enum class EhFrameSource { kNone, kRelocated, kLive, kFile };
const char* EhFrameSourceName(EhFrameSource s);

struct SymfileCode {
  // One per function (the symbol's name) or stretch of code between them
  // (named ""), all sharing one image; in address order.
  std::vector<JitRegion> regions;
  EhFrameSource eh_frame = EhFrameSource::kNone;
  // Why the .eh_frame could not be used, when it could not ("" otherwise).
  std::string eh_frame_problem;
};

// "jit-symfile-0x<symfile_addr>": the modules' path.
std::string SymfileModulePath(uint64_t symfile_addr);

// `symfile` is the object's bytes, read from `symfile_addr` in the target
// whose memory is `mem` (for the code bytes and the live .eh_frame).
// DataLoss for a malformed ELF, Unimplemented for a big-endian one or a
// machine the unwinder does not know, NotFound when it has no executable
// section with a load address.
absl::StatusOr<SymfileCode> SymfileRegions(absl::Span<const uint8_t> symfile,
                                           uint64_t symfile_addr, memory::Memory& mem);

}  // namespace unwindd::proc::jit

#endif  // UNWINDD_PROC_JIT_SYMFILE_H_
