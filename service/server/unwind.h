// The unwinds unwindd runs on its workers, with the authorization checks
// that belong around each: a caller's request in, an UnwindResult out.
// Everything here runs on one worker thread from start to end (ptrace's
// thread affinity: see proc/live_target.h).
//
//   absl::StatusOr<UnwindResult> r = UnwindLiveProcess(caller, request, env);
#ifndef UNWINDD_SERVICE_SERVER_UNWIND_H_
#define UNWINDD_SERVICE_SERVER_UNWIND_H_

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "proc/target.h"
#include "service/common/convert.h"
#include "service/server/auth.h"
#include "service/server/binaries.h"
#include "unwinder/locate/locator.h"
#include "unwinder/module_cache.h"
#include "unwinder/unwinder.h"

namespace unwindd::service {

// What every unwind needs from the server.
struct UnwindEnv {
  unwinder::ModuleCache* cache = nullptr;
  std::atomic<uint64_t>* bytes_read = nullptr;  // counter, may be null
  const ServerBinaries* binaries = nullptr;     // debug dirs, debuginfod
};

// Wraps a target so that every byte read from its memory is counted.
std::unique_ptr<proc::Target> CountReads(proc::Target& target,
                                         std::atomic<uint64_t>* counter);

// The jitdumps one request may read (proc/jit): their bytes become the
// ELF images of the code, held for the request.
inline constexpr uint64_t kMaxJitDumpBytesPerRequest = uint64_t{64} << 20;

// Unwinds `target` and adds each module's file offset.
UnwindResult UnwindAndDescribe(proc::Target& target, const UnwindEnv& env,
                               const unwinder::UnwindOptions& options);

// `stacks` (unwound over `target`) with each module's file offset.
UnwindResult Describe(unwinder::ProcessStacks stacks, const proc::Target& target);

struct LiveRequest {
  pid_t pid = 0;
  std::vector<pid_t> tids;
  absl::Duration stop_timeout = absl::InfiniteDuration();  // proc::AttachOptions
  unwinder::UnwindOptions options;
  // Where else to find files and debug information; options.locate
  // points here.
  locate::LocateOptions locate;
};

// Checks the caller may ptrace `pid`, attaches, checks again with the
// process stopped (it may have exec'd a set-uid program, or the pid may
// have been reused, in between), unwinds and detaches.
absl::StatusOr<UnwindResult> UnwindLiveProcess(const Caller& caller,
                                               const LiveRequest& request,
                                               const UnwindEnv& env);

}  // namespace unwindd::service

#endif  // UNWINDD_SERVICE_SERVER_UNWIND_H_
