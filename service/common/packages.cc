#include "service/common/packages.h"

#include "proc/core_elf.h"

namespace unwindd::service {

ModulePackages FindModulePackages(const unwinder::ProcessStacks& stacks,
                                  proc::Target* target) {
  ModulePackages out(stacks.modules.size());
  for (size_t i = 0; i < stacks.modules.size(); ++i) {
    const unwinder::ModuleInfo& m = stacks.modules[i];
    const bool usable_file = m.error.empty() && !m.mismatch &&
                             !m.from_memory && m.path != "[vdso]";
    if (usable_file) {
      absl::StatusOr<proc::PackageNote> p =
          proc::ReadPackageNoteFromFile(m.file.empty() ? m.path : m.file);
      if (p.ok()) {
        out[i] = *std::move(p);
        continue;
      }
    }
    if (target == nullptr) continue;
    absl::StatusOr<proc::ElfImage> img =
        proc::ReadElfImage(target->memory(), m.start, proc::ElfView::kLoaded);
    if (!img.ok()) continue;
    absl::StatusOr<proc::PackageNote> p =
        proc::ReadPackageNoteFromImage(target->memory(), *img, proc::ElfView::kLoaded);
    if (p.ok()) out[i] = *std::move(p);
  }
  return out;
}

}  // namespace unwindd::service
