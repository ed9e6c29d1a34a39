// Whether a snapshot sample's pid is still the process that was sampled. A
// pid is only a number: the process may have exited since the sample was
// taken (a perf.data file replayed later), and the kernel may have given
// the number to another process, whose memory must never be read for it.
// A process is identified by its pid and its start time (field 22 of
// /proc/PID/stat, clock ticks after boot), which two processes sharing a
// pid cannot both have.
//
//   PidTracker pids;                                  // one per stream
//   PidTracker::Check c = pids.Identify(pid, sample.pid_start_time());
//   if (c.live) { ... read the process's memory or maps ...
//                 if (!pids.StillThere(pid)) { ... throw that away ... } }
//   else response.set_pid_ignored_reason(c.reason);
//
// How the identity holds while we read: the first check opens a pidfd
// (pidfd_open) and only then reads the start time, and checks the pidfd
// again after that read. A pid cannot be reused while the process behind
// a pidfd has not been reaped, so if the pidfd's process is still there
// after a read of /proc/PID/... or of PID's memory, that read was of the
// same process (StillThere, one pidfd_send_signal(0) after a sample that
// used it). Expected start time: the sample's own (pid_start_time) when it
// gives one, else the start time the pid had when this tracker first saw
// it.
//
// Bounded: pidfds for at most kMaxOpenPids pids (the least recently used
// is closed and reopened when needed), first-seen start times for at most
// kMaxKnownPids. Not thread-safe (one per stream; a stream's samples run
// one at a time).
#ifndef UNWINDD_SERVICE_SERVER_PID_IDENTITY_H_
#define UNWINDD_SERVICE_SERVER_PID_IDENTITY_H_

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "memory/scoped_fd.h"

namespace unwindd::service {

// Field 22 of /proc/PID/stat (proc(5): starttime, clock ticks after boot).
// NotFound when there is no such process; DataLoss if the file does not
// parse.
absl::StatusOr<uint64_t> ReadProcessStartTime(pid_t pid);

class PidTracker {
 public:
  static constexpr size_t kMaxOpenPids = 64;
  static constexpr size_t kMaxKnownPids = 1 << 16;
  // How long a pid found dead or reused is believed so before it is looked
  // at again (a busy stream of samples of an exited process costs one
  // look per interval, not one per sample).
  static constexpr absl::Duration kRecheckInterval = absl::Seconds(1);

  struct Check {
    bool live = false;
    // Why not, for the response ("" when live).
    std::string reason;
  };

  PidTracker() = default;
  PidTracker(const PidTracker&) = delete;
  PidTracker& operator=(const PidTracker&) = delete;

  // Is the process now at `pid` (> 0) the sampled one: the one started at
  // `start_time`, or (0) the one this tracker first saw at `pid`?
  Check Identify(pid_t pid, uint64_t start_time);

  // After a sample that Identify found live read the process (memory or
  // /proc files): true if it still is the same process, so what was read
  // was its. False (and the pid is then not live until looked at again)
  // if it has exited: the read may have been of another process.
  bool StillThere(pid_t pid);

 private:
  struct Entry {
    memory::ScopedFd pidfd;   // invalid: no live process at the pid
    uint64_t start_time = 0;  // of the pidfd's process
    absl::Time checked;       // when the pidfd was (re)opened
    std::string gone;         // why there is no pidfd
    uint64_t last_use = 0;
  };

  // Opens (again) a pidfd for `pid` and reads its start time; on failure
  // `e.pidfd` is invalid and `e.gone` says why.
  void Open(pid_t pid, Entry& e);
  // Closes the least recently used entry.
  void Evict();

  absl::flat_hash_map<pid_t, Entry> open_;
  // The start time each pid had when this tracker first saw it alive.
  absl::flat_hash_map<pid_t, uint64_t> first_seen_;
  uint64_t clock_ = 0;
};

}  // namespace unwindd::service

#endif  // UNWINDD_SERVICE_SERVER_PID_IDENTITY_H_
