#include "service/common/packages.h"

#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "proc/core_elf.h"
#include "unwinder/module.h"

namespace unwindd::service {

namespace {

// The package note among an opened module's note areas; Unavailable when
// what was read cannot be trusted (the file changed meanwhile).
absl::StatusOr<proc::PackageNote> PackageNoteOf(const unwinder::Module& module) {
  absl::StatusOr<proc::PackageNote> p = proc::FindPackageNoteInAreas(module.NoteAreas());
  if (module.changed()) return absl::UnavailableError("the file changed while it was read");
  return p;
}

}  // namespace

ModulePackages FindModulePackages(const unwinder::ProcessStacks& stacks,
                                  proc::Target* target, unwinder::ModuleCache* cache) {
  ModulePackages out(stacks.modules.size());
  for (size_t i = 0; i < stacks.modules.size(); ++i) {
    const unwinder::ModuleInfo& m = stacks.modules[i];
    const bool usable_file = m.error.empty() && !m.mismatch &&
                             !m.from_memory && m.path != "[vdso]";
    if (usable_file) {
      // The module the unwind opened, if the cache still holds it (the same
      // build is the same package: the build ID covers the note); else the
      // file, opened again.
      std::shared_ptr<unwinder::Module> opened =
          cache != nullptr && !m.build_id.empty() ? cache->FindAnyByBuildId(m.build_id) : nullptr;
      absl::StatusOr<proc::PackageNote> p =
          opened != nullptr ? PackageNoteOf(*opened) : absl::UnavailableError("not opened");
      if (absl::IsUnavailable(p.status())) {
        p = proc::ReadPackageNoteFromFile(m.file.empty() ? m.path : m.file);
      }
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
