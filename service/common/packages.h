// Each unwound module's ELF package note (proc/package_note.h), for the
// "package" object of the CLI's JSON and the API's Module.package.
//
//   ModulePackages p = FindModulePackages(stacks, &target);
//   if (p[frame.module]) ... p[frame.module]->Get("name") ...
//
// From the file the unwinder used for the module; without one, from the
// image in the target's memory (a core's dumped first pages hold the
// notes, as systemd-coredump reads them).
#ifndef UNWINDD_SERVICE_COMMON_PACKAGES_H_
#define UNWINDD_SERVICE_COMMON_PACKAGES_H_

#include <optional>
#include <vector>

#include "proc/package_note.h"
#include "proc/target.h"
#include "unwinder/unwinder.h"

namespace unwindd::service {

// Indexed like stacks.modules.
using ModulePackages = std::vector<std::optional<proc::PackageNote>>;

// `target` may be null (then only files are read).
ModulePackages FindModulePackages(const unwinder::ProcessStacks& stacks,
                                  proc::Target* target);

}  // namespace unwindd::service

#endif  // UNWINDD_SERVICE_COMMON_PACKAGES_H_
