#include "service/cli/jit_code.h"

#include <utility>

#include "proc/jit/gdb_jit.h"
#include "proc/jit/jit_code.h"

namespace unwindd::service {

std::unique_ptr<proc::Target> WithAnnouncedCode(proc::Target& target,
                                                std::vector<std::string>* warnings) {
  std::vector<proc::jit::JitRegion> regions = proc::jit::FindJitCode(target, warnings);
  for (proc::jit::JitRegion& r : proc::jit::FindGdbJitCode(target, warnings)) {
    regions.push_back(std::move(r));
  }
  if (regions.empty()) return nullptr;
  return proc::jit::WithJitCode(target, std::move(regions));
}

}  // namespace unwindd::service
