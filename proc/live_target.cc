// LiveTarget: a live process held in ptrace-stop for the object's lifetime.
//
// Why PTRACE_SEIZE + PTRACE_INTERRUPT rather than PTRACE_ATTACH: ATTACH
// stops threads with a real SIGSTOP, which the process (and its parent's
// waitpid) can observe and which we would have to swallow; INTERRUPT stops
// a seized thread without any signal. Options are 0: no PTRACE_O_EXITKILL
// (if we crash, the kernel detaches and the target simply resumes) and no
// TRACECLONE (new threads are picked up by re-reading /proc/PID/task).
//
// ptrace requests are accepted only from the tracing *thread* (the kernel
// checks child->parent == current), so InitialRegisters and the destructor
// must run on the thread that called AttachLive. waitpid() works from any
// thread of our process.
#include "proc/live_target.h"

#include <elf.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "arch/arch_ops.h"
#include "memory/factories.h"
#include "proc/live_arch.h"
#include "proc/maps.h"
#include "proc/procfs.h"
#include "proc/unstopped_threads.h"

namespace unwindd::proc {
namespace {

// PF_KTHREAD (include/linux/sched.h): the definitive kernel-thread flag in
// /proc/PID/stat.
constexpr uint64_t kPfKthread = 0x00200000;
// Once every listed thread is stopped nobody can create more, so rounds
// only repeat while threads are being created as we attach; this bounds a
// process that clones faster than we can stop it.
constexpr int kMaxAttachRounds = 100;

// EPERM from PTRACE_SEIZE on a live thread: say which of the usual causes
// applies, so the user knows what to fix. `tracer`: the thread's
// TracerPid.
absl::Status AttachDenied(pid_t pid, pid_t tid, const absl::StatusOr<int64_t>& tracer) {
  std::string hint = "not root and not the same uid, or yama ptrace_scope";
  if (tracer.ok() && *tracer != 0) {
    hint = absl::StrFormat("already traced by PID %d?", *tracer);
  }
  return absl::PermissionDeniedError(
      absl::StrFormat("cannot ptrace thread %d of process %d: %s (%s)", tid,
                      pid, strerror(EPERM), hint));
}

void* Arg(uintptr_t v) { return reinterpret_cast<void*>(v); }

struct LeaderFacts {
  char state = '?';
  int64_t tgid = 0;  // 0: not reported
  bool kernel_thread = false;
};

absl::StatusOr<LeaderFacts> ReadLeaderFacts(pid_t pid) {
  const std::string path = TaskPath(pid, pid, "status");
  absl::StatusOr<std::string> text = ReadProcFile(pid, path);
  if (!text.ok()) return text.status();
  LeaderFacts f;
  // "State:\tS (sleeping)" (fs/proc/array.c task_state).
  const size_t at = text->find("State:\t");
  if (at == std::string::npos || at + 7 >= text->size()) {
    return absl::DataLossError(absl::StrFormat("%s: no State field", path));
  }
  f.state = (*text)[at + 7];
  absl::StatusOr<int64_t> tgid = ParseStatusField(*text, "Tgid", path);
  if (tgid.ok()) f.tgid = *tgid;
  absl::StatusOr<int64_t> kthread = ParseStatusField(*text, "Kthread", path);
  if (kthread.ok()) {
    f.kernel_thread = *kthread != 0;
  } else {
    absl::StatusOr<ProcStat> stat = ReadStat(pid, pid);
    if (!stat.ok()) return stat.status();
    f.kernel_thread = (stat->flags & kPfKthread) != 0;
  }
  return f;
}

// Where to probe which memory mechanism works: the starts of the first
// readable mappings. [vvar] is skipped: it is marked readable but is a PFN
// map that no mechanism reads.
std::vector<uint64_t> ProbeAddresses(const std::vector<Mapping>& maps) {
  constexpr size_t kMaxProbes = 8;
  std::vector<uint64_t> out;
  for (const Mapping& m : maps) {
    if (out.size() >= kMaxProbes) break;
    if (!m.read || m.path.rfind("[vvar", 0) == 0) continue;
    out.push_back(m.start);
  }
  return out;
}

// Which bits of a code address hold a PAC, from the arch's regset for it
// (aarch64 NT_ARM_PAC_MASK) of a stopped thread. Arches without one, and
// kernels or CPUs without pointer authentication (EINVAL), report nothing.
std::optional<arch::PacMask> ReadPacMask(const arch::ArchOps& ops, pid_t tid) {
  if (ops.pac_mask_note == 0) return std::nullopt;
  alignas(8) std::array<uint8_t, 64> buf{};
  iovec iov = {buf.data(), buf.size()};
  if (ptrace(PTRACE_GETREGSET, tid, Arg(ops.pac_mask_note), &iov) != 0) {
    return std::nullopt;
  }
  absl::StatusOr<arch::PacMask> mask =
      ops.pac_mask_from_note(absl::MakeConstSpan(buf.data(), iov.iov_len));
  if (!mask.ok()) return std::nullopt;
  return *mask;
}

struct ThreadState {
  bool interrupted = false;  // PTRACE_INTERRUPT sent, stop not yet reaped
  bool stopped = false;      // waitpid reported its ptrace-stop
  bool gone = false;         // exited (or reaped) since we listed it
  // Its exit was collected by waitpid (or it was never ours to collect).
  // An exited tracee stays a zombie attached to us until then: its parent
  // cannot reap it, and a leader's exit waits for every other thread's.
  bool reaped = false;
  // The signal of a signal-delivery-stop: the kernel holds it back while we
  // trace the thread, and PTRACE_DETACH must pass it on or it is lost.
  int pending_signal = 0;
  // Interrupted, but not stopped by the attach's deadline
  // (AttachOptions::stop_timeout); `note` is what ThreadNote says of it.
  bool unstoppable = false;
  std::string note;
  // Not seized by this attach: an earlier one of this process's could not
  // stop it and holds it still (AddOrphan). Never waited for or detached
  // here: its stop, when it comes, is the holder's to collect.
  bool held_elsewhere = false;
};

class LiveTarget final : public Target {
 public:
  LiveTarget(pid_t pid, const AttachOptions& options)
      : pid_(pid),
        tracer_tid_(gettid()),
        stop_timeout_(options.stop_timeout),
        deadline_(options.stop_timeout == absl::InfiniteDuration()
                      ? absl::InfiniteFuture()
                      : absl::Now() + options.stop_timeout) {}
  ~LiveTarget() override {
    // The leader last: the kernel reports a traced group leader's exit only
    // once every other thread of the group has been reaped, so waiting for
    // it first (a process killed while we hold it) would block forever.
    for (auto& [tid, ts] : threads_) {
      if (tid != pid_) Detach(tid, ts);
    }
    auto leader = threads_.find(pid_);
    if (leader != threads_.end()) Detach(pid_, leader->second);
    // Seized, and still not stopped: detached when they stop.
    for (const auto& [tid, ts] : threads_) {
      if (ts.unstoppable && ts.interrupted && !ts.gone && !ts.held_elsewhere) {
        AddOrphan(tid);
      }
    }
  }

  absl::Status Attach(absl::Span<const pid_t> tids);

  arch::Arch arch() const override { return arch_; }
  pid_t pid() const override { return pid_; }
  std::vector<pid_t> Threads() const override;
  absl::StatusOr<arch::RegisterSet> InitialRegisters(pid_t tid) override;
  memory::Memory& memory() override { return *memory_; }
  const std::vector<Mapping>& mappings() const override { return mappings_; }
  std::vector<std::string> FileCandidates(const Mapping& m) const override;
  std::optional<arch::PacMask> pac_mask() const override { return pac_mask_; }
  std::string ThreadNote(pid_t tid) const override;

 private:
  // The registers of a thread that did not stop: its pc and sp from
  // /proc/PID/task/TID/syscall.
  absl::StatusOr<arch::RegisterSet> UnstoppedRegisters(pid_t tid, ThreadState& ts);

  // Seizes and interrupts `tid`; a thread that has already exited is
  // dropped silently.
  absl::Status SeizeThread(pid_t tid);
  // If an interrupt is outstanding, blocks until `tid` reports its
  // ptrace-stop or its exit.
  void WaitForStop(pid_t tid, ThreadState& ts);
  // The same for the group leader, without blocking in waitpid: the kernel
  // reports a traced leader's exit only once every other thread of the
  // group has been reaped, so a blocking wait on a process killed under us
  // would never return.
  void WaitForLeaderStop(ThreadState& ts);
  // Non-blocking: collects an exit (or a new stop) of `tid`.
  void Poll(pid_t tid, ThreadState& ts);
  void Detach(pid_t tid, ThreadState& ts);
  // Collects the exit of a thread that has gone but not been reaped.
  void Reap(pid_t tid, ThreadState& ts);
  // PTRACE_DETACH (re-stopping a thread that was resumed); no reaping.
  void TryDetach(pid_t tid, ThreadState& ts);

  const pid_t pid_;
  const pid_t tracer_tid_;
  const absl::Duration stop_timeout_;
  const absl::Time deadline_;
  // Interrupts a blocking waitpid that would wait past deadline_.
  DeadlineTimer timer_;
  // A live thread whose /proc entries show the address space: the main
  // thread, unless it has exited (pthread_exit) while others run, in which
  // case /proc/PID/maps and friends are empty.
  pid_t mm_tid_ = 0;
  arch::Arch arch_ = arch::Arch::kX86_64;
  std::map<pid_t, ThreadState> threads_;  // every thread we seized
  std::unique_ptr<memory::Memory> memory_;
  std::vector<Mapping> mappings_;
  std::optional<arch::PacMask> pac_mask_;
};

absl::Status LiveTarget::Attach(absl::Span<const pid_t> tids) {
  // Earlier attaches' threads that have stopped since: detached now.
  CollectOrphans();
  if (pid_ <= 0) {
    return absl::InvalidArgumentError(absl::StrFormat("invalid pid %d", pid_));
  }
  if (pid_ == getpid()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "cannot attach to process %d: it is this process", pid_));
  }
  // One /proc read says what we need of the leader: its state, its thread
  // group and whether it is a kernel thread (status's Kthread line, Linux
  // 6.x; /proc/PID/stat's PF_KTHREAD flag where the line is missing).
  absl::StatusOr<LeaderFacts> leader = ReadLeaderFacts(pid_);
  if (!leader.ok()) return leader.status();
  if (leader->tgid != 0 && leader->tgid != pid_) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%d is a thread of process %d, not a process", pid_, leader->tgid));
  }
  if (leader->kernel_thread) {
    return absl::FailedPreconditionError(
        absl::StrFormat("process %d is a kernel thread", pid_));
  }
  absl::StatusOr<std::vector<pid_t>> tasks = ListTasks(pid_);
  if (!tasks.ok()) return tasks.status();
  const bool leader_dead = leader->state == 'Z' || leader->state == 'X';
  if (leader_dead && tasks->size() <= 1) {
    return absl::FailedPreconditionError(
        absl::StrFormat("process %d is a zombie", pid_));
  }
  std::vector<pid_t> wanted(tids.begin(), tids.end());
  std::sort(wanted.begin(), wanted.end());
  wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
  for (pid_t tid : wanted) {
    if (!std::binary_search(tasks->begin(), tasks->end(), tid)) {
      return absl::NotFoundError(
          absl::StrFormat("thread %d is not in process %d", tid, pid_));
    }
  }
  absl::StatusOr<arch::Arch> a =
      DetectArch(pid_, leader_dead ? tasks->back() : pid_);
  if (!a.ok()) {
    // A live leader without an executable (its exe link is gone) is a
    // kernel thread that the flags did not name.
    if (!leader_dead && absl::IsNotFound(a.status()) && !ThreadExited(pid_, pid_)) {
      return absl::FailedPreconditionError(
          absl::StrFormat("process %d is a kernel thread", pid_));
    }
    return a.status();
  }
  arch_ = *a;

  std::set<pid_t> tried;
  for (int round = 0;; ++round) {
    if (round == kMaxAttachRounds) {
      return absl::AbortedError(absl::StrFormat(
          "threads of process %d kept appearing for %d attach rounds", pid_,
          kMaxAttachRounds));
    }
    std::vector<pid_t> batch;
    if (!wanted.empty()) {
      if (round > 0) break;  // only the threads asked for
      batch = wanted;
    } else {
      if (round > 0) tasks = ListTasks(pid_);
      if (!tasks.ok()) return tasks.status();
      for (pid_t tid : *tasks) {
        if (!tried.count(tid)) batch.push_back(tid);
      }
    }
    if (batch.empty()) break;
    // Interrupt the whole batch before waiting, so its threads stop in
    // parallel rather than one scheduling round-trip each.
    for (pid_t tid : batch) {
      tried.insert(tid);
      absl::Status s = SeizeThread(tid);
      if (!s.ok()) return s;  // the destructor detaches what we seized
    }
    // The leader last (see ~LiveTarget): if the process dies now, the
    // other threads' exits are collected first, and then the leader's is
    // reported.
    std::stable_partition(batch.begin(), batch.end(),
                          [this](pid_t tid) { return tid != pid_; });
    for (pid_t tid : batch) {
      auto it = threads_.find(tid);
      if (it != threads_.end()) WaitForStop(tid, it->second);
    }
  }

  for (const auto& [tid, ts] : threads_) {
    if (ts.gone) continue;
    if (mm_tid_ == 0 || tid == pid_) mm_tid_ = tid;
  }
  if (mm_tid_ == 0) {
    return absl::NotFoundError(absl::StrFormat(
        "no such process %d (its threads exited while attaching)", pid_));
  }
  // Read with every thread stopped, so the map cannot change under us.
  absl::StatusOr<std::vector<Mapping>> maps = ReadMaps(mm_tid_);
  if (!maps.ok()) return maps.status();
  if (maps->empty()) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "process %d is a kernel thread (it has no mappings)", pid_));
  }
  mappings_ = *std::move(maps);
  pac_mask_ = ReadPacMask(arch::GetArchOps(arch_), mm_tid_);
  // Probed now that we are the tracer, so PTRACE_PEEKDATA can qualify; at
  // the first readable mappings of the map just read (no second read of
  // /proc/PID/maps).
  memory_ = memory::CreateCachedMemory(
      memory::CreateProcessMemoryProbing(mm_tid_, ProbeAddresses(mappings_)));
  timer_.Disarm();
  return absl::OkStatus();
}

absl::Status LiveTarget::SeizeThread(pid_t tid) {
  if (ptrace(PTRACE_SEIZE, tid, nullptr, nullptr) != 0) {
    const int err = errno;
    if (err == ESRCH) return absl::OkStatus();  // exited since listed
    // The kernel also says EPERM for a thread that is already exiting.
    if (err == EPERM && ThreadExited(pid_, tid)) return absl::OkStatus();
    if (err == EPERM) {
      // TracerPid is the tracing thread's id.
      absl::StatusOr<int64_t> tracer = ReadStatusField(pid_, tid, "TracerPid");
      if (deadline_ != absl::InfiniteFuture() && tracer.ok() && *tracer > 0 &&
          access(absl::StrCat("/proc/self/task/", *tracer).c_str(), F_OK) == 0) {
        // Traced by this process: an earlier unwind could not stop it, and
        // holds it until it stops (unstopped_threads.h, AddOrphan).
        ThreadState& ts = threads_[tid];
        ts.unstoppable = true;
        ts.held_elsewhere = true;
        return absl::OkStatus();
      }
      return AttachDenied(pid_, tid, tracer);
    }
    return absl::ErrnoToStatus(
        err,
        absl::StrFormat("PTRACE_SEIZE of thread %d of process %d", tid, pid_));
  }
  ThreadState& ts = threads_[tid];
  // INTERRUPT on our own seized tracee fails only once the thread has been
  // released, i.e. it exited.
  if (ptrace(PTRACE_INTERRUPT, tid, nullptr, nullptr) != 0) {
    Poll(tid, ts);
  } else {
    ts.interrupted = true;
  }
  return absl::OkStatus();
}

void LiveTarget::WaitForStop(pid_t tid, ThreadState& ts) {
  if (tid == pid_) {
    WaitForLeaderStop(ts);
    return;
  }
  if (ts.held_elsewhere) return;
  if (ts.unstoppable) {
    Poll(tid, ts);  // it may have stopped since
    return;
  }
  bool bounded = false;
  if (deadline_ != absl::InfiniteFuture() && ts.interrupted) {
    // Most threads have stopped by the time they are waited for: a timer
    // only for one that has not.
    Poll(tid, ts);
    bounded = ts.interrupted && !ts.gone && timer_.Arm(deadline_);
  }
  while (ts.interrupted && !ts.gone) {
    int status = 0;
    pid_t r = waitpid(tid, &status, __WALL);
    if (r < 0 && errno == EINTR) {
      if (bounded && absl::Now() >= deadline_) {
        ts.unstoppable = true;
        break;
      }
      continue;
    }
    if (r < 0) {  // ECHILD: not (or no longer) our tracee
      ts.gone = true;
      ts.reaped = true;
    } else if (WIFEXITED(status) || WIFSIGNALED(status)) {
      ts.gone = true;
      ts.reaped = true;
    } else if (WIFSTOPPED(status)) {
      // Event 0 is a signal-delivery-stop (a signal arrived before our
      // interrupt); PTRACE_EVENT_STOP is the interrupt or a group-stop.
      if ((status >> 16) == 0) ts.pending_signal = WSTOPSIG(status);
      ts.stopped = true;
      ts.interrupted = false;
    }
  }
}

void LiveTarget::WaitForLeaderStop(ThreadState& ts) {
  if (ts.held_elsewhere) return;
  for (int i = 0; ts.interrupted && !ts.gone; ++i) {
    Poll(pid_, ts);
    if (!ts.interrupted || ts.gone) return;
    if (ts.unstoppable || (i % 16 == 15 && absl::Now() >= deadline_)) {
      ts.unstoppable = true;
      return;
    }
    if (ThreadExited(pid_, pid_)) {
      // Dead (SIGKILL also ends threads whose stops we already collected):
      // collect the others' exits, after which the leader's is reported.
      for (auto& [tid, other] : threads_) {
        if (tid != pid_ && !other.reaped) Poll(tid, other);
      }
    }
    usleep(i < 100 ? 10 : 1000);
  }
}

void LiveTarget::Poll(pid_t tid, ThreadState& ts) {
  int status = 0;
  pid_t r;
  do {
    r = waitpid(tid, &status, WNOHANG | __WALL);
  } while (r < 0 && errno == EINTR);
  if (r < 0) {
    ts.gone = ThreadExited(pid_, tid);
    ts.reaped = ts.gone;  // ECHILD: nothing of ours to collect
  } else if (r == tid && (WIFEXITED(status) || WIFSIGNALED(status))) {
    ts.gone = true;
    ts.reaped = true;
  } else if (r == tid && WIFSTOPPED(status)) {
    if ((status >> 16) == 0) ts.pending_signal = WSTOPSIG(status);
    ts.stopped = true;
    ts.interrupted = false;
    ts.unstoppable = false;  // late, but stopped
  }
}

void LiveTarget::Reap(pid_t tid, ThreadState& ts) {
  if (!ts.gone || ts.reaped) return;
  if (tid != pid_) {
    // A traced non-leader's exit is always reported to its tracer, and the
    // thread has exited: this returns as soon as it is a zombie.
    int status;
    while (waitpid(tid, &status, __WALL) < 0 && errno == EINTR) {
    }
    ts.reaped = true;
    return;
  }
  // The leader's exit is reported once the other threads are reaped; a
  // thread we do not trace (attached with a tid list) may still be exiting.
  for (int i = 0; i < 2000 && !ts.reaped; ++i) {
    int status;
    pid_t r = waitpid(tid, &status, WNOHANG | __WALL);
    if (r == tid || (r < 0 && errno != EINTR)) {
      ts.reaped = true;
    } else {
      usleep(1000);
    }
  }
}

void LiveTarget::Detach(pid_t tid, ThreadState& ts) {
  TryDetach(tid, ts);
  Reap(tid, ts);
}

void LiveTarget::TryDetach(pid_t tid, ThreadState& ts) {
  // Interrupted, but the attach failed before we collected the stop.
  WaitForStop(tid, ts);
  // Still not stopped: the kernel detaches only stopped tracees. The
  // orphan list (AddOrphan, from the destructor) does once it stops, or
  // the end of this thread, which drops the stop it has pending.
  if (ts.unstoppable) return;
  for (int attempt = 0; attempt < 2 && !ts.gone; ++attempt) {
    const uintptr_t sig = static_cast<uintptr_t>(ts.pending_signal);
    if (ptrace(PTRACE_DETACH, tid, nullptr, Arg(sig)) == 0 || errno != ESRCH) {
      return;
    }
    // ESRCH: the thread exited, or it is running (someone resumed it) and
    // the kernel detaches only stopped tracees. Stop it again, then retry;
    // a failed INTERRUPT means it is gone, and Poll reaps the zombie so it
    // does not linger as our tracee.
    ts.stopped = false;
    if (ptrace(PTRACE_INTERRUPT, tid, nullptr, nullptr) != 0) {
      Poll(tid, ts);
      return;
    }
    ts.interrupted = true;
    WaitForStop(tid, ts);
  }
}

std::vector<pid_t> LiveTarget::Threads() const {
  std::vector<pid_t> out;
  auto main = threads_.find(pid_);
  if (main != threads_.end() && !main->second.gone) out.push_back(pid_);
  for (const auto& [tid, ts] : threads_) {
    if (tid != pid_ && !ts.gone) out.push_back(tid);
  }
  return out;
}

absl::StatusOr<arch::RegisterSet> LiveTarget::InitialRegisters(pid_t tid) {
  auto it = threads_.find(tid);
  if (it == threads_.end()) {
    return absl::NotFoundError(
        absl::StrFormat("thread %d of process %d is not attached", tid, pid_));
  }
  ThreadState& ts = it->second;
  // gettid() is a system call; a thread's id never changes.
  thread_local const pid_t self = gettid();
  if (self != tracer_tid_) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "process %d is traced by thread %d; the kernel refuses ptrace "
        "requests from thread %d",
        pid_, tracer_tid_, self));
  }
  if (ts.unstoppable) {
    if (!ts.held_elsewhere) Poll(tid, ts);  // stopped since?
    if (ts.unstoppable) return UnstoppedRegisters(tid, ts);
  }
  // Room for any arch's NT_PRSTATUS regset; iov_len returns the real size.
  alignas(8) std::array<uint8_t, 1024> buf{};
  for (int attempt = 0; attempt < 2 && !ts.gone; ++attempt) {
    iovec iov = {buf.data(), buf.size()};
    if (ptrace(PTRACE_GETREGSET, tid, Arg(NT_PRSTATUS), &iov) == 0) {
      return RegistersFromPrstatus(
          arch_, absl::MakeConstSpan(buf.data(), iov.iov_len));
    }
    const int err = errno;
    if (err != ESRCH) {
      return absl::ErrnoToStatus(
          err, absl::StrFormat("PTRACE_GETREGSET of thread %d of process %d",
                               tid, pid_));
    }
    // ESRCH: exited (a zombie until reaped), or not stopped any more.
    ts.stopped = false;
    Poll(tid, ts);
    if (!ts.stopped && !ts.gone) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "thread %d of process %d is not in a ptrace-stop", tid, pid_));
    }
  }
  if (ts.gone) {
    return absl::NotFoundError(absl::StrFormat("thread %d has exited", tid));
  }
  return absl::FailedPreconditionError(absl::StrFormat(
      "thread %d of process %d keeps leaving its ptrace-stop", tid, pid_));
}

absl::StatusOr<arch::RegisterSet> LiveTarget::UnstoppedRegisters(pid_t tid, ThreadState& ts) {
  // What it is doing, for the note: its state and where it sleeps.
  absl::StatusOr<ProcStat> stat = ReadStat(pid_, tid);
  absl::StatusOr<std::string> wchan = ReadProcFile(pid_, TaskPath(pid_, tid, "wchan"), 256);
  std::string doing = absl::StrFormat("state %c", stat.ok() ? stat->state : '?');
  if (wchan.ok() && !wchan->empty() && *wchan != "0") absl::StrAppend(&doing, " in ", *wchan);
  const std::string where = TaskPath(pid_, tid, "syscall");
  const std::string timeout = absl::FormatDuration(stop_timeout_);
  absl::StatusOr<std::string> text = ReadProcFile(pid_, where, 512);
  std::optional<BlockedRegisters> blocked;
  if (text.ok()) blocked = ParseSyscallFile(*text);
  if (!blocked) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "thread %d did not stop within %s (%s), and %s gives no registers (%s)", tid,
        timeout, doing, where,
        text.ok() ? absl::StripAsciiWhitespace(*text) : text.status().message()));
  }
  const std::string why =
      ts.held_elsewhere
          ? absl::StrFormat("has not stopped since an earlier unwind waited %s for it", timeout)
          : absl::StrFormat("did not stop within %s", timeout);
  ts.note = absl::StrFormat("not stopped: thread %d %s (%s); walked from the registers in %s",
                            tid, why, doing, where);
  arch::RegisterSet regs(arch_);
  regs.set_pc(blocked->pc);
  regs.set_sp(blocked->sp);
  if (blocked->in_syscall) {
    const std::array<int, 6> numbers = SyscallArgumentRegisters(arch_);
    for (size_t i = 0; i < numbers.size(); ++i) regs.Set(numbers[i], blocked->args[i]);
  }
  return regs;
}

std::string LiveTarget::ThreadNote(pid_t tid) const {
  auto it = threads_.find(tid);
  return it != threads_.end() && it->second.unstoppable ? it->second.note : "";
}

std::vector<std::string> LiveTarget::FileCandidates(const Mapping& m) const {
  if (!m.IsFileBacked()) return {};
  std::vector<std::string> out;
  // The path as the target sees it, which is ours unless the target lives
  // in another mount namespace. A deleted file's path may now name a newer
  // file (an upgraded library), so skip it then.
  if (!m.deleted) out.push_back(m.path);
  // The very inode that is mapped, even if deleted or in another namespace;
  // named exactly as the kernel prints the range (lowercase hex, no 0x).
  out.push_back(
      absl::StrFormat("/proc/%d/map_files/%x-%x", mm_tid_, m.start, m.end));
  // The path resolved in the target's root (containers, chroots).
  if (!m.deleted)
    out.push_back(absl::StrCat("/proc/", mm_tid_, "/root", m.path));
  return out;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Target>> AttachLive(
    pid_t pid, absl::Span<const pid_t> tids, const AttachOptions& options) {
  auto target = std::make_unique<LiveTarget>(pid, options);
  // On failure `target` is destroyed here, detaching whatever it attached.
  absl::Status s = target->Attach(tids);
  if (!s.ok()) return s;
  return std::unique_ptr<Target>(std::move(target));
}

}  // namespace unwindd::proc
