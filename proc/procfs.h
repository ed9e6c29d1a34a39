// Small readers for the /proc files that proc/ needs: whole files, the task
// list, and single fields of stat and status. Errors are canonical and name
// the pid: NotFound when the process (or thread) is gone, PermissionDenied
// when we may not look.
//
//   absl::StatusOr<std::vector<pid_t>> tids = ListTasks(pid);
//   absl::StatusOr<ProcStat> st = ReadStat(pid, tid);
#ifndef UNWINDD_PROC_PROCFS_H_
#define UNWINDD_PROC_PROCFS_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace unwindd::proc {

// "/proc/PID/REST", or "/proc/PID/task/TID/REST" for a thread's own view.
std::string ProcPath(pid_t pid, absl::string_view rest);
std::string TaskPath(pid_t pid, pid_t tid, absl::string_view rest);

// Maps an errno from opening or reading a /proc file of `pid`.
absl::Status ProcError(int err, pid_t pid, absl::string_view path);

// The whole file; ResourceExhausted if it is longer than `max_bytes`.
absl::StatusOr<std::string> ReadProcFile(pid_t pid, const std::string& path,
                                         size_t max_bytes = 1 << 20);

// The thread ids in /proc/PID/task, ascending.
absl::StatusOr<std::vector<pid_t>> ListTasks(pid_t pid);

// Fields of /proc/PID/task/TID/stat (proc(5)).
struct ProcStat {
  char state = '?';    // R, S, D, T, t, Z, X, ...
  uint64_t flags = 0;  // PF_* (include/linux/sched.h)
};
absl::StatusOr<ProcStat> ReadStat(pid_t pid, pid_t tid);
// The same from the file's text; `path` names it in errors.
absl::StatusOr<ProcStat> ParseStat(absl::string_view text,
                                   absl::string_view path);

// A numeric "Key:\tvalue" field of /proc/PID/task/TID/status (TracerPid,
// Tgid...). NotFound if the thread or the field is missing.
absl::StatusOr<int64_t> ReadStatusField(pid_t pid, pid_t tid,
                                        absl::string_view key);
// The same from the file's text; `path` names it in errors.
absl::StatusOr<int64_t> ParseStatusField(absl::string_view text,
                                         absl::string_view key,
                                         absl::string_view path);

// The thread is gone or on its way out (zombie or dead).
bool ThreadExited(pid_t pid, pid_t tid);

}  // namespace unwindd::proc

#endif  // UNWINDD_PROC_PROCFS_H_
