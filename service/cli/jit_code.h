// The code JIT runtimes announced for a live process or a core, laid over
// its mappings when it is unwound (proc/jit): perf jitdump files the
// process maps and the GDB JIT interface's registered objects.
//
//   std::vector<std::string> warnings;
//   ProcessStacks stacks = UnwindWithAnnouncedCode(*target, cache, options, &warnings);
#ifndef UNWINDD_SERVICE_CLI_JIT_CODE_H_
#define UNWINDD_SERVICE_CLI_JIT_CODE_H_

#include <memory>
#include <string>
#include <vector>

#include "proc/target.h"
#include "unwinder/module_cache.h"
#include "unwinder/unwinder.h"

namespace unwindd::service {

// `target` (which must outlive the result) with its announced code as
// modules; null when it has none. What could not be read is a warning.
std::unique_ptr<proc::Target> WithAnnouncedCode(proc::Target& target,
                                                std::vector<std::string>* warnings);

// Whether a frame of `stacks` ran code that no file of the target's maps
// holds: anonymous memory, a memfd, a deleted or device file, or no
// mapping at all. Only there can announced code change a walk.
bool RanUnfiledCode(const unwinder::ProcessStacks& stacks, const proc::Target& target);

// `target` unwound; when a frame ran unfiled code, unwound again with the
// code JIT runtimes announced laid over it. Finding that code opens every
// mapped file for the GDB JIT interface's symbol, which would otherwise be
// most of a one-shot command's time for no frame.
unwinder::ProcessStacks UnwindWithAnnouncedCode(proc::Target& target,
                                                unwinder::ModuleCache& cache,
                                                const unwinder::UnwindOptions& options,
                                                std::vector<std::string>* warnings);

}  // namespace unwindd::service

#endif  // UNWINDD_SERVICE_CLI_JIT_CODE_H_
