// Thread contexts (MDRawContext*) in minidumps: one ContextFormat per
// architecture, each in its own file (context_x86_64.cc, context_aarch64.cc,
// context_x86.cc), and the lookups generic code uses. Nothing here switches
// on the architecture: a new one is a new file and a line in kFormats.
//
//   absl::StatusOr<arch::RegisterSet> r = ParseContext(bytes, arch::Arch::kX86_64);
//   std::vector<uint8_t> out = WriteContext(regs);
//
// Registers are DWARF-numbered (arch/arch.h); only the ones the unwinder
// tracks are read and written (general-purpose registers, SP and PC).
#ifndef UNWINDD_PROC_MINIDUMP_CONTEXT_H_
#define UNWINDD_PROC_MINIDUMP_CONTEXT_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "arch/arch.h"
#include "arch/register_set.h"

namespace unwindd::proc::minidump {

struct ContextFormat {
  arch::Arch arch;
  // MDCPUArchitecture values of SystemInfo that mean this arch.
  uint16_t cpu_architectures[2];
  // The MD_CONTEXT_<CPU> bit in context_flags (the CPU mask 0xffffff00
  // part), and where context_flags is.
  uint32_t cpu_flag;
  size_t flags_offset;
  size_t flags_size;  // 4, or 8 for the old arm64 layout
  // sizeof the MDRawContext<CPU> this format reads and writes.
  size_t size;
  // Bytes of at least `size` -> registers. The caller checked the flags.
  arch::RegisterSet (*parse)(absl::Span<const uint8_t> bytes);
  // Registers -> exactly `size` bytes, context_flags set to what is
  // filled in (control and integer registers). Null for read-only formats.
  std::vector<uint8_t> (*write)(const arch::RegisterSet& regs);
};

// Every format, preferred first for each arch (the one written).
absl::Span<const ContextFormat* const> AllContextFormats();

// The arch a SystemInfo processor_architecture names; Unimplemented for
// one we do not unwind (32-bit ARM, MIPS, PPC, ...).
absl::StatusOr<arch::Arch> ArchFromCpuArchitecture(uint16_t cpu);
// The processor_architecture value to write for `arch`.
uint16_t CpuArchitectureOf(arch::Arch arch);

// The format of a context of `bytes.size()` bytes whose context_flags name
// its CPU: `expected` (from SystemInfo) when known; otherwise the arch is
// told from the size and the flags. DataLoss for a context too short or
// whose flags name another CPU than `expected`.
absl::StatusOr<const ContextFormat*> FindContextFormat(
    absl::Span<const uint8_t> bytes, std::optional<arch::Arch> expected);

// Registers from a whole context.
absl::StatusOr<arch::RegisterSet> ParseContext(
    absl::Span<const uint8_t> bytes, std::optional<arch::Arch> expected);

// The context written for `regs` (regs.arch()'s first format).
std::vector<uint8_t> WriteContext(const arch::RegisterSet& regs);

// Per-arch formats (defined in context_<arch>.cc).
extern const ContextFormat kContextX86_64;
extern const ContextFormat kContextAArch64;
extern const ContextFormat kContextAArch64Old;
extern const ContextFormat kContextX86;

// Little-endian helpers for the per-arch files.
uint64_t LoadU64(absl::Span<const uint8_t> b, size_t off);
uint32_t LoadU32(absl::Span<const uint8_t> b, size_t off);
void StoreU64(std::vector<uint8_t>& b, size_t off, uint64_t v);
void StoreU32(std::vector<uint8_t>& b, size_t off, uint32_t v);

}  // namespace unwindd::proc::minidump

#endif  // UNWINDD_PROC_MINIDUMP_CONTEXT_H_
