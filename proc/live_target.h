// A live process, stopped for as long as the LiveTarget exists.
//
//   absl::StatusOr<std::unique_ptr<LiveTarget>> t = LiveTarget::Attach(pid, {});
//   ... unwind ...
//   t->reset();   // detaches from every thread (also on error paths)
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


absl::StatusOr<std::unique_ptr<Target>> AttachLive(pid_t pid,
                                                   absl::Span<const pid_t> tids);

}  // namespace unwindd::proc

#endif  // UNWINDD_PROC_LIVE_TARGET_H_
