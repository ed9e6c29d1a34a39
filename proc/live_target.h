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
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "proc/target.h"

namespace unwindd::proc {

struct AttachOptions {
  // How long the attach waits for the threads to stop, in all. A thread
  // that has not stopped by then (in an uninterruptible sleep, "D": a
  // vfork parent, I/O on a hung NFS mount) is not waited for: its walk
  // starts from the pc and sp /proc/PID/task/TID/syscall shows while it
  // is blocked in the kernel (its user stack cannot change meanwhile), and
  // Target::ThreadNote says so. It stays seized with a stop pending: the
  // destructor detaches it if it has stopped by then, and otherwise only
  // the end of the attaching thread releases it (the kernel then drops
  // the pending stop), so a finite timeout is for a caller that exits
  // after the unwind. Infinite: wait as long as it takes, as eu-stack and
  // gdb do.
  absl::Duration stop_timeout = absl::InfiniteDuration();
};

// `tids` empty: every thread, including ones created while we attach.
// Otherwise only those threads (each must belong to `pid`).
absl::StatusOr<std::unique_ptr<Target>> AttachLive(
    pid_t pid, absl::Span<const pid_t> tids, const AttachOptions& options = {});

}  // namespace unwindd::proc

#endif  // UNWINDD_PROC_LIVE_TARGET_H_
