// The target architecture as data. Generic code never uses the host's #ifdefs
// and never switches on the arch: an x86_64 host unwinds aarch64 cores and
// 32-bit x86 processes, and what differs between architectures is asked of
// the arch's hook table (arch_ops.h).
//
//   const ArchInfo& a = GetArchInfo(Arch::kX86_64);
//   uint64_t sp = regs.Get(a.sp);
//
// Register numbers are DWARF numbers (the psABI tables), so CFI rules index
// RegisterSet directly. Each arch also has a PC slot: on x86_64 and x86 it is
// the return-address column (16 / 8); aarch64 has no DWARF PC column in CFI,
// so we use 32, the number AADWARF64 reserves for it.
#ifndef UNWINDD_ARCH_ARCH_H_
#define UNWINDD_ARCH_ARCH_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace unwindd::arch {

// One value per line of arch/archs.def, in its order.
enum class Arch : uint8_t {
#define UNWINDD_ARCH(enumerator, directory) enumerator,
#include "arch/archs.def"
#undef UNWINDD_ARCH
};

inline constexpr int kNumArchs = 0
#define UNWINDD_ARCH(enumerator, directory) +1
#include "arch/archs.def"
#undef UNWINDD_ARCH
    ;

// Enough DWARF columns for every GPR, the PC slot and aarch64's
// RA_SIGN_STATE (34); rules for higher columns (vector registers) are parsed
// but not tracked, since no caller needs them to find return addresses.
inline constexpr int kMaxRegisters = 40;

struct ArchInfo {
  Arch arch;
  absl::string_view name;       // "x86_64", "aarch64", "x86"
  int address_size;             // bytes in a pointer: 8 or 4
  int num_regs;                 // columns [0, num_regs) are tracked
  int sp;                       // DWARF number of the stack pointer
  int pc;                       // the PC slot (see above)
  int ra;                       // default return-address column of CIEs
  int fp;                       // frame pointer register
  uint16_t elf_machine;         // EM_X86_64 / EM_AARCH64 / EM_386
};

// Each arch's ArchOps::info, indexed by Arch; defined in registry.cc.
extern const ArchInfo* const kArchInfos[kNumArchs];

inline const ArchInfo& GetArchInfo(Arch arch) {
  return *kArchInfos[static_cast<int>(arch)];
}
absl::string_view RegisterName(Arch arch, int dwarf_reg);  // "" if unknown

// The arch of an ELF file or core file from its header's e_machine and
// EI_CLASS: the arch whose ArchOps lists both. x32 (EM_X86_64, ELFCLASS32)
// runs with the x86_64 regset, so it is kX86_64. Unimplemented for any other
// machine.
absl::StatusOr<Arch> ArchFromElfMachine(uint16_t machine, uint8_t elf_class);

// The arch named `name` ("x86_64", "aarch64", "x86"); NotFound otherwise.
absl::StatusOr<Arch> ArchFromName(absl::string_view name);

}  // namespace unwindd::arch

#endif  // UNWINDD_ARCH_ARCH_H_
