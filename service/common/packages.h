// Each unwound module's ELF package note (proc/package_note.h), for the
// "package" object of the CLI's JSON and the API's Module.package.
//
//   ModulePackages p = FindModulePackages(stacks, &target, &cache);
//   if (p[frame.module]) ... p[frame.module]->Get("name") ...
//
// From the module the unwinder opened, when `cache` (which the unwind
// used) still holds it; else from the file the unwinder used for the
// module; without one, from the image in the target's memory (a core's
// dumped first pages hold the notes, as systemd-coredump reads them).
#ifndef UNWINDD_SERVICE_COMMON_PACKAGES_H_
#define UNWINDD_SERVICE_COMMON_PACKAGES_H_

#include <optional>
#include <vector>

#include "proc/package_note.h"
#include "proc/target.h"
#include "unwinder/module_cache.h"
#include "unwinder/unwinder.h"

namespace unwindd::service {

// Indexed like stacks.modules.
using ModulePackages = std::vector<std::optional<proc::PackageNote>>;

// `target` may be null (then only files are read), and so may `cache`
// (then every file is opened again, as the caller: the server's cache is
// shared between callers).
ModulePackages FindModulePackages(const unwinder::ProcessStacks& stacks,
                                  proc::Target* target, unwinder::ModuleCache* cache);

}  // namespace unwindd::service

#endif  // UNWINDD_SERVICE_COMMON_PACKAGES_H_
