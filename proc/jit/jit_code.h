// The code JIT runtimes announced for a process, as mappings the unwinder
// opens like files: each piece of code a mapping of its own
// ("jitted-PID-N.so", perf's name), with the ELF image genelf.h builds of
// its code, CFI and name (Target::CodeImage).
//
//   absl::StatusOr<std::vector<JitRegion>> r = LoadJitDumpFile(fd, max_bytes);
//   std::unique_ptr<Target> t = WithJitCode(live, *std::move(r));
//   UnwindTarget(*t, cache, options);   // JIT frames are modules now
//
// For a live process or a core, the code there now is what counts: the
// regions are laid over the target's mappings in load order, later ones
// replacing what they cover (code addresses are reused after a GC), as the
// kernel replaces a mapping a new one covers. A perf recording instead
// applies each region at its load time (service/cli/perf/sample_reader.cc).
#ifndef UNWINDD_PROC_JIT_JIT_CODE_H_
#define UNWINDD_PROC_JIT_JIT_CODE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proc/jit/jitdump.h"
#include "proc/maps.h"
#include "proc/target.h"

namespace unwindd::proc::jit {

// A jitdump larger than this is read up to it (its first records).
inline constexpr uint64_t kMaxJitDumpBytes = uint64_t{1} << 30;

struct JitRegion {
  Mapping mapping;  // genelf.h's JitMapping
  std::shared_ptr<const CodeImage> code;  // its image and name
  uint64_t time = 0;  // when the runtime loaded it (the dump's clock)
};

// Every code load of `dump` (moved code at its new place), in the dump's
// order, with its image, named as perf inject names its files in `dir`
// (the dump's directory: JitModulePath). Code genelf cannot describe
// (another ELF machine) is InvalidArgument.
absl::StatusOr<std::vector<JitRegion>> JitRegions(const JitDump& dump, absl::string_view dir);

// Reads the jitdump open on `fd` (at most `max_bytes`; a dump still being
// written is read as far as it goes) and makes its regions; `dump_path` is
// the dump's path in the process (for the regions' names).
absl::StatusOr<std::vector<JitRegion>> LoadJitDumpFile(int fd, uint64_t max_bytes,
                                                       absl::string_view dump_path);

// `mappings` with `regions` laid over them in order (each replaces what it
// covers), sorted by start.
std::vector<Mapping> LayOver(std::vector<Mapping> mappings, const std::vector<JitRegion>& regions);

// `inner` (not owned; must outlive the result) with `regions` laid over
// its mappings; CodeImage answers for the regions that remain.
std::unique_ptr<Target> WithJitCode(Target& inner, std::vector<JitRegion> regions);

// The jitdumps `target` maps (IsJitDumpPath), each read through the
// target's own file candidates, and their regions, in mapping order. A
// dump that cannot be read is a warning in `warnings`, not an error. At
// most `max_bytes` of dumps are read in all (a server's bound per request).
std::vector<JitRegion> FindJitCode(const Target& target, std::vector<std::string>* warnings,
                                   uint64_t max_bytes = kMaxJitDumpBytes);

}  // namespace unwindd::proc::jit

#endif  // UNWINDD_PROC_JIT_JIT_CODE_H_
