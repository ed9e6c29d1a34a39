#include "arch/arch.h"

#include <elf.h>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"

namespace unwindd::arch {
namespace {

// psABI DWARF register numbers: x86_64 psABI §3.6.2 fig. 3.36; i386 SysV
// ABI; AADWARF64 §4.1.
constexpr ArchInfo kX86_64Info = {Arch::kX86_64, "x86_64", 8, 17, 7, 16, 16, 6,
                                  EM_X86_64};
constexpr ArchInfo kX86Info = {Arch::kX86, "x86", 4, 9, 4, 8, 8, 5, EM_386};
constexpr ArchInfo kAArch64Info = {Arch::kAArch64, "aarch64", 8, 35, 31, 32,
                                   30, 29, EM_AARCH64};

constexpr absl::string_view kX86_64Names[] = {
    "rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp", "r8",
    "r9",  "r10", "r11", "r12", "r13", "r14", "r15", "rip"};
constexpr absl::string_view kX86Names[] = {"eax", "ecx", "edx", "ebx", "esp",
                                           "ebp", "esi", "edi", "eip"};

}  // namespace

static_assert(static_cast<int>(Arch::kX86_64) == 0 &&
              static_cast<int>(Arch::kAArch64) == 1 &&
              static_cast<int>(Arch::kX86) == 2);
const ArchInfo kArchInfos[3] = {kX86_64Info, kAArch64Info, kX86Info};

absl::string_view RegisterName(Arch arch, int reg) {
  switch (arch) {
    case Arch::kX86_64:
      if (reg >= 0 && reg < 17) return kX86_64Names[reg];
      return "";
    case Arch::kX86:
      if (reg >= 0 && reg < 9) return kX86Names[reg];
      return "";
    case Arch::kAArch64: {
      static constexpr absl::string_view kA64[] = {
          "x0",  "x1",  "x2",  "x3",  "x4",  "x5",  "x6",  "x7",  "x8",
          "x9",  "x10", "x11", "x12", "x13", "x14", "x15", "x16", "x17",
          "x18", "x19", "x20", "x21", "x22", "x23", "x24", "x25", "x26",
          "x27", "x28", "x29", "x30", "sp",  "pc",  "elr_mode",
          "ra_sign_state"};
      if (reg >= 0 && reg < 35) return kA64[reg];
      return "";
    }
  }
  return "";
}

absl::StatusOr<Arch> ArchFromElfMachine(uint16_t machine, uint8_t elf_class) {
  if (machine == EM_X86_64 &&
      (elf_class == ELFCLASS64 || elf_class == ELFCLASS32)) {
    return Arch::kX86_64;
  }
  if (machine == EM_386 && elf_class == ELFCLASS32) return Arch::kX86;
  if (machine == EM_AARCH64 && elf_class == ELFCLASS64) return Arch::kAArch64;
  return absl::UnimplementedError(absl::StrFormat(
      "ELF machine %d (class %d) is not supported", machine, elf_class));
}

}  // namespace unwindd::arch
