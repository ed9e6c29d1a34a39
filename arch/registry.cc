// The table of every architecture's ArchOps, from arch/archs.def, and the
// generic queries over it.
#include <elf.h>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "arch/arch.h"
#include "arch/arch_ops.h"

namespace unwindd::arch {

#define UNWINDD_ARCH(enumerator, directory) \
  namespace directory {                     \
  extern const ArchOps kOps;                \
  }
#include "arch/archs.def"
#undef UNWINDD_ARCH

// Addresses of extern constants: constant-initialized, no static
// constructor.
const ArchOps* const kArchOps[kNumArchs] = {
#define UNWINDD_ARCH(enumerator, directory) &directory::kOps,
#include "arch/archs.def"
#undef UNWINDD_ARCH
};

const ArchInfo* const kArchInfos[kNumArchs] = {
#define UNWINDD_ARCH(enumerator, directory) &directory::kOps.info,
#include "arch/archs.def"
#undef UNWINDD_ARCH
};

absl::Span<const ArchOps* const> AllArchOps() { return kArchOps; }

absl::string_view RegisterName(Arch arch, int reg) {
  absl::Span<const absl::string_view> names = GetArchOps(arch).register_names;
  if (reg < 0 || static_cast<size_t>(reg) >= names.size()) return "";
  return names[reg];
}

absl::StatusOr<Arch> ArchFromElfMachine(uint16_t machine, uint8_t elf_class) {
  for (const ArchOps* ops : AllArchOps()) {
    if (ops->info.elf_machine != machine || elf_class == ELFCLASSNONE) continue;
    for (uint8_t c : ops->elf_classes) {
      if (c == elf_class) return ops->info.arch;
    }
  }
  return absl::UnimplementedError(absl::StrFormat(
      "ELF machine %d (class %d) is not supported", machine, elf_class));
}

absl::StatusOr<Arch> ArchFromName(absl::string_view name) {
  for (const ArchOps* ops : AllArchOps()) {
    if (ops->info.name == name) return ops->info.arch;
  }
  return absl::NotFoundError(absl::StrFormat("no architecture named \"%s\"", name));
}

}  // namespace unwindd::arch
