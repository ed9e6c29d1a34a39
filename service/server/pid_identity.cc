#include "service/server/pid_identity.h"

#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "proc/procfs.h"

namespace unwindd::service {
namespace {

// proc(5): "(2) comm %s" may hold spaces and parentheses, so fields are
// counted after the last ')': state is field 3, starttime field 22.
constexpr int kStartTimeField = 22;

int PidfdOpen(pid_t pid) {
  return static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
}

// 0 while the pidfd's process has not been reaped (a zombie still holds its
// pid); ESRCH once it has.
int PidfdAlive(int pidfd) {
  if (syscall(SYS_pidfd_send_signal, pidfd, 0, nullptr, 0) == 0) return 0;
  // EPERM: it exists, we may only not signal it (unwindd without CAP_KILL).
  return errno == EPERM ? 0 : errno;
}

}  // namespace

absl::StatusOr<uint64_t> ReadProcessStartTime(pid_t pid) {
  const std::string path = proc::ProcPath(pid, "stat");
  absl::StatusOr<std::string> stat = proc::ReadProcFile(pid, path, 4096);
  if (!stat.ok()) return stat.status();
  const size_t close = stat->rfind(')');
  if (close == std::string::npos) {
    return absl::DataLossError(absl::StrFormat("%s: no ')' after the command", path));
  }
  std::vector<absl::string_view> fields = absl::StrSplit(
      absl::string_view(*stat).substr(close + 1), ' ', absl::SkipWhitespace());
  // fields[0] is field 3 (state).
  constexpr size_t kIndex = kStartTimeField - 3;
  uint64_t start = 0;
  if (fields.size() <= kIndex || !absl::SimpleAtoi(fields[kIndex], &start)) {
    return absl::DataLossError(
        absl::StrFormat("%s: field %d (starttime) is missing or not a number", path,
                        kStartTimeField));
  }
  return start;
}

void PidTracker::Open(pid_t pid, Entry& e) {
  e.pidfd = memory::ScopedFd();
  e.checked = absl::Now();
  e.gone.clear();
  memory::ScopedFd fd(PidfdOpen(pid));
  if (!fd.valid()) {
    const int err = errno;
    e.gone = err == ESRCH
                 ? absl::StrFormat("process %d has exited", pid)
             : err == ENOSYS
                 ? "this kernel has no pidfd_open (Linux 5.3), so unwindd cannot "
                   "tell a live process from a reused pid"
                 : absl::StrFormat("pidfd_open(%d): %s", pid, std::strerror(err));
    return;
  }
  absl::StatusOr<uint64_t> start = ReadProcessStartTime(pid);
  if (!start.ok()) {
    e.gone = absl::StrFormat("process %d has exited (%s)", pid, start.status().message());
    return;
  }
  // The start time read above is the pidfd's process's only if that
  // process was still there after the read (its pid not yet reusable).
  if (PidfdAlive(fd.get()) != 0) {
    e.gone = absl::StrFormat("process %d has exited", pid);
    return;
  }
  e.pidfd = std::move(fd);
  e.start_time = *start;
  if (first_seen_.size() >= kMaxKnownPids && !first_seen_.contains(pid)) {
    first_seen_.clear();
  }
  first_seen_.try_emplace(pid, *start);
}

void PidTracker::Evict() {
  auto oldest = open_.end();
  for (auto it = open_.begin(); it != open_.end(); ++it) {
    if (oldest == open_.end() || it->second.last_use < oldest->second.last_use) {
      oldest = it;
    }
  }
  if (oldest != open_.end()) open_.erase(oldest);
}

PidTracker::Check PidTracker::Identify(pid_t pid, uint64_t start_time) {
  auto it = open_.find(pid);
  if (it == open_.end()) {
    if (open_.size() >= kMaxOpenPids) Evict();
    it = open_.try_emplace(pid).first;
    Open(pid, it->second);
  } else {
    Entry& e = it->second;
    // Dead, or another process than the sample's: the pid may have found
    // its process again (a recording's next process with that pid). Looked
    // at again at most once per interval.
    const bool doubt = !e.pidfd.valid() || (start_time != 0 && start_time != e.start_time);
    if (doubt && absl::Now() - e.checked >= kRecheckInterval) Open(pid, e);
  }
  Entry& e = it->second;
  e.last_use = ++clock_;
  if (!e.pidfd.valid()) return {false, e.gone};
  if (start_time != 0) {
    if (e.start_time == start_time) return {true, ""};
    return {false, absl::StrFormat(
                       "pid %d now belongs to another process (started at %d clock "
                       "ticks after boot; the sample's was started at %d): the pid "
                       "was reused",
                       pid, e.start_time, start_time)};
  }
  auto first = first_seen_.find(pid);
  if (first == first_seen_.end() || first->second == e.start_time) return {true, ""};
  return {false, absl::StrFormat(
                     "pid %d now belongs to another process than when this stream "
                     "first named it (started at %d clock ticks after boot, not %d)",
                     pid, e.start_time, first->second)};
}

bool PidTracker::StillThere(pid_t pid) {
  auto it = open_.find(pid);
  if (it == open_.end() || !it->second.pidfd.valid()) return false;
  Entry& e = it->second;
  if (PidfdAlive(e.pidfd.get()) == 0) return true;
  e.pidfd = memory::ScopedFd();
  e.checked = absl::Now();
  e.gone = absl::StrFormat("process %d exited while the sample was unwound", pid);
  return false;
}

}  // namespace unwindd::service
