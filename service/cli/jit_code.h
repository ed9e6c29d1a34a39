// The code JIT runtimes announced for a live process or a core, laid over
// its mappings before it is unwound (proc/jit): perf jitdump files the
// process maps.
//
//   std::unique_ptr<proc::Target> jit = WithAnnouncedCode(*target, &warnings);
//   UnwindTarget(jit ? *jit : *target, cache, options);
#ifndef UNWINDD_SERVICE_CLI_JIT_CODE_H_
#define UNWINDD_SERVICE_CLI_JIT_CODE_H_

#include <memory>
#include <string>
#include <vector>

#include "proc/target.h"

namespace unwindd::service {

// `target` (which must outlive the result) with its announced code as
// modules; null when it has none. What could not be read is a warning.
std::unique_ptr<proc::Target> WithAnnouncedCode(proc::Target& target,
                                                std::vector<std::string>* warnings);

}  // namespace unwindd::service

#endif  // UNWINDD_SERVICE_CLI_JIT_CODE_H_
