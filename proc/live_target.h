// A live process, stopped for as long as the Target AttachLive returns
// exists.
//
//   absl::StatusOr<std::unique_ptr<Target>> t = AttachLive(pid, {});
//   ... unwind ...
//   t->reset();   // detaches from every thread (also on error paths)
//
// Thread affinity: the kernel accepts ptrace requests only from the thread
// that attached, so call InitialRegisters and destroy the Target on the
// thread that called AttachLive (other threads get FailedPrecondition, and a
// destructor run elsewhere cannot detach: the target would stay stopped
// until that thread exits). memory() and mappings() work from any thread.
//
// Attach: PTRACE_SEIZE + PTRACE_INTERRUPT on every thread of /proc/PID/task
// (or only `tids`), waiting for each to stop; threads that appear while we
// attach are picked up by re-reading the task list until it is stable;
// threads that exit are dropped (InitialRegisters -> NotFound). Registers via
// PTRACE_GETREGSET NT_PRSTATUS, converted by arch/. The destructor detaches
// from every thread it attached, whatever happened.
//
// Errors: NotFound (no such process / tid not in the process),
// PermissionDenied (not allowed to ptrace, or already traced — the message
// says which), FailedPrecondition (a kernel thread, or a zombie).
#ifndef UNWINDD_PROC_LIVE_TARGET_H_
#define UNWINDD_PROC_LIVE_TARGET_H_

#include <sys/types.h>

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "proc/target.h"

namespace unwindd::proc {

// `tids` empty: every thread, including ones created while we attach.
// Otherwise only those threads (each must belong to `pid`).
absl::StatusOr<std::unique_ptr<Target>> AttachLive(
    pid_t pid, absl::Span<const pid_t> tids);

}  // namespace unwindd::proc

#endif  // UNWINDD_PROC_LIVE_TARGET_H_
