// An ELF image for one piece of JIT code, laid out as perf's genelf.c lays
// out the jitted-PID-N.so files `perf inject --jit` writes, so that the
// project's Module (unwind information, symbols) reads it like any file:
//
//   0x00   ELF header, one PT_LOAD (R+X) from file offset 0 at vaddr 0
//   0x80   .text: the code (perf's GEN_ELF_TEXT_OFFSET), so a frame's
//          module-relative PC is 0x80 + (pc - code_addr), as in perf's file
//   ALIGN_8(0x80 + code size)
//          .eh_frame, then .eh_frame_hdr: the runtime's unwinding data,
//          placed where its pc-relative addresses resolve (jitdump.h)
//   .symtab with one function symbol (the runtime's name for the code),
//   .strtab, .shstrtab, the section headers.
//
// The code maps at `code_addr` from file offset kJitTextOffset (the
// proc::Mapping to give it: JitMapping), so the load bias is
// code_addr - kJitTextOffset.
#ifndef UNWINDD_PROC_JIT_GENELF_H_
#define UNWINDD_PROC_JIT_GENELF_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proc/jit/jitdump.h"
#include "proc/maps.h"

namespace unwindd::proc::jit {

inline constexpr uint64_t kJitTextOffset = 0x80;

// `elf_mach` is the dump's (EM_X86_64, EM_AARCH64: a 64-bit image; EM_386:
// a 32-bit one). InvalidArgument for another machine.
absl::StatusOr<std::shared_ptr<const std::vector<uint8_t>>> BuildJitElf(const JitCode& code,
                                                                       uint32_t elf_mach);

// perf's name for the code's file: "DIR/jitted-PID-INDEX.so", where DIR is
// the directory of the jitdump (`perf inject --jit` writes the files
// there); "jitted-PID-INDEX.so" when `dir` is empty.
std::string JitModulePath(absl::string_view dir, uint32_t pid, uint64_t code_index);

// The mapping of `code` in its process: [code_addr, code_addr + code_size),
// r-x, at file offset kJitTextOffset of its image, named JitModulePath.
Mapping JitMapping(const JitCode& code, uint32_t pid, absl::string_view dir);

}  // namespace unwindd::proc::jit

#endif  // UNWINDD_PROC_JIT_GENELF_H_
