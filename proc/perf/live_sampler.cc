#include "proc/perf/live_sampler.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "arch/arch_ops.h"
#include "memory/scoped_fd.h"
#include "proc/live_arch.h"
#include "proc/maps.h"
#include "proc/perf/abi.h"

namespace unwindd::proc::perf {

// One thread's event and its ring buffer: a metadata page, then
// `ring_pages` pages the kernel writes records into (struct
// perf_event_mmap_page: data_head is where the kernel writes next,
// data_tail what we have read up to).
struct LiveSampler::Ring {
  memory::ScopedFd fd;
  void* base = MAP_FAILED;
  size_t length = 0;
  ~Ring() {
    if (base != MAP_FAILED) munmap(base, length);
  }
  perf_event_mmap_page* meta() const { return static_cast<perf_event_mmap_page*>(base); }
  const uint8_t* data() const {
    return static_cast<const uint8_t*>(base) + meta()->data_offset;
  }
};

namespace {

absl::Status Errno(int err, absl::string_view what) {
  if (err == EACCES || err == EPERM) {
    return absl::PermissionDeniedError(absl::StrCat(
        what, ": ", strerror(err),
        " (needs root or CAP_PERFMON, or kernel.perf_event_paranoid <= 1)"));
  }
  if (err == ESRCH) return absl::NotFoundError(absl::StrCat(what, ": no such process"));
  if (err == ENOSYS || err == ENOENT || err == EOPNOTSUPP) {
    return absl::UnimplementedError(absl::StrCat(what, ": ", strerror(err)));
  }
  return absl::ErrnoToStatus(err, what);
}

std::vector<pid_t> Tasks(pid_t pid) {
  std::vector<pid_t> out;
  const std::string dir = absl::StrCat("/proc/", pid, "/task");
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    int tid = 0;
    if (absl::SimpleAtoi(e->d_name, &tid) && tid > 0) out.push_back(tid);
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

std::string ReadComm(pid_t pid, pid_t tid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/task/", tid, "/comm"));
  std::string comm;
  std::getline(in, comm);
  return comm;
}

// Every register the unwinder tracks, in perf's numbering for `arch`.
uint64_t RegsMask(arch::Arch arch) {
  uint64_t mask = 0;
  absl::Span<const int> table = arch::GetArchOps(arch).perf_regs;
  for (size_t i = 0; i < table.size() && i < 64; ++i) {
    if (table[i] >= 0) mask |= uint64_t{1} << i;
  }
  return mask;
}

}  // namespace

LiveSampler::LiveSampler(pid_t pid, const LiveSamplerOptions& options)
    : pid_(pid), options_(options) {}

LiveSampler::~LiveSampler() { Stop(); }

absl::StatusOr<std::unique_ptr<LiveSampler>> LiveSampler::Start(
    pid_t pid, const LiveSamplerOptions& options) {
  if (options.frequency_hz <= 0 || options.frequency_hz > 100000) {
    return absl::InvalidArgumentError("sampling frequency must be 1..100000 Hz");
  }
  if (options.stack_bytes == 0 || options.stack_bytes % 8 != 0 ||
      options.stack_bytes >= 65528) {
    return absl::InvalidArgumentError("stack copy size must be a multiple of 8 below 64 KiB");
  }
  if (options.ring_pages == 0 || (options.ring_pages & (options.ring_pages - 1)) != 0 ||
      options.ring_pages > 4096) {
    return absl::InvalidArgumentError("ring buffer pages must be a power of two up to 4096");
  }
  absl::StatusOr<arch::Arch> arch = DetectArch(pid, pid);
  if (!arch.ok()) return arch.status();
  std::unique_ptr<LiveSampler> s(new LiveSampler(pid, options));
  // The register mask is in the kernel's (the host's) perf numbering, also
  // for a 32-bit process on a 64-bit kernel (whose samples say
  // PERF_SAMPLE_REGS_ABI_32).
  utsname u{};
  uname(&u);
  s->info_.arch = u.machine;
  s->info_.os_release = u.release;
  s->info_.hostname = u.nodename;
  absl::StatusOr<arch::Arch> host_arch = arch::ArchFromName(u.machine);
  const arch::Arch regs_arch = host_arch.ok() ? *host_arch : *arch;

  perf_event_attr attr{};
  attr.size = sizeof(attr);
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_CPU_CLOCK;
  attr.freq = 1;
  attr.sample_freq = static_cast<uint64_t>(options.frequency_hz);
  attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
                     PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_REGS_USER |
                     PERF_SAMPLE_STACK_USER;
  attr.sample_regs_user = RegsMask(regs_arch);
  attr.sample_stack_user = options.stack_bytes;
  attr.exclude_callchain_user = 1;  // the user part is ours to unwind
  attr.disabled = 1;
  attr.inherit = 1;
  attr.mmap = 1;
  attr.mmap2 = 1;
  attr.comm = 1;
  attr.comm_exec = 1;
  attr.task = 1;
  attr.sample_id_all = 1;
  attr.exclude_hv = 1;
  // CLOCK_MONOTONIC (perf record -k 1): the clock of the jitdumps runtimes
  // write, so that each sample sees the JIT code loaded by its time.
  attr.use_clockid = 1;
  attr.clockid = CLOCK_MONOTONIC;
  s->attr_bytes_.resize(sizeof(attr));
  std::memcpy(s->attr_bytes_.data(), &attr, sizeof(attr));
  EventAttr parsed;
  absl::Status p = ParseEventAttr(s->attr_bytes_, parsed);
  if (!p.ok()) return p;
  parsed.name = "cpu-clock";
  absl::Status added = s->attrs_.Add(std::move(parsed));
  if (!added.ok()) return added;

  for (int c = 0, n = static_cast<int>(sysconf(_SC_NPROCESSORS_CONF)); c < n && c < 4096; ++c) {
    s->cpus_.push_back(c);
  }
  // Every thread now, then again for those created while we opened: a new
  // thread inherits the event of the thread that made it only from then on.
  for (int pass = 0; pass < 2; ++pass) {
    for (pid_t tid : Tasks(pid)) {
      absl::Status st = s->OpenThread(tid);
      if (!st.ok() && !absl::IsNotFound(st) && !absl::IsAlreadyExists(st)) return st;
    }
  }
  if (s->opened_tids_.empty()) {
    return absl::NotFoundError(absl::StrCat("process ", pid, " has no threads"));
  }
  for (const std::unique_ptr<Ring>& r : s->rings_) ioctl(r->fd.get(), PERF_EVENT_IOC_ENABLE, 0);
  for (const memory::ScopedFd& fd : s->events_) ioctl(fd.get(), PERF_EVENT_IOC_ENABLE, 0);
  return s;
}

// Opens the thread's event on every CPU; AlreadyExists if it has them.
absl::Status LiveSampler::OpenThread(pid_t tid) {
  if (std::find(opened_tids_.begin(), opened_tids_.end(), tid) != opened_tids_.end()) {
    return absl::AlreadyExistsError("open");
  }
  if (opened_tids_.size() >= kMaxSampledThreads ||
      events_.size() + rings_.size() + cpus_.size() > kMaxSampledEvents) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("more than %d threads to sample", kMaxSampledThreads));
  }
  perf_event_attr attr{};
  std::memcpy(&attr, attr_bytes_.data(), sizeof(attr));
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  for (size_t c = 0; c < cpus_.size(); ++c) {
    const int fd = static_cast<int>(
        syscall(SYS_perf_event_open, &attr, tid, cpus_[c], -1, PERF_FLAG_FD_CLOEXEC));
    if (fd < 0) {
      const int err = errno;
      if (err == ESRCH) return absl::NotFoundError("thread exited");
      return Errno(err, absl::StrCat("perf_event_open for thread ", tid, " on CPU ", cpus_[c]));
    }
    memory::ScopedFd event(fd);
    if (rings_.size() <= c) {
      auto ring = std::make_unique<Ring>();
      ring->length = page * (1 + options_.ring_pages);
      ring->base = mmap(nullptr, ring->length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (ring->base == MAP_FAILED) {
        return Errno(errno, absl::StrCat("mapping the ring buffer of CPU ", cpus_[c]));
      }
      ring->fd = std::move(event);
      rings_.push_back(std::move(ring));
      continue;
    }
    if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, rings_[c]->fd.get()) != 0) {
      return Errno(errno, absl::StrCat("redirecting thread ", tid, "'s event on CPU ", cpus_[c]));
    }
    events_.push_back(std::move(event));
  }
  opened_tids_.push_back(tid);
  return absl::OkStatus();
}

void LiveSampler::Stop() {
  for (const std::unique_ptr<Ring>& r : rings_) {
    if (r->fd.valid()) ioctl(r->fd.get(), PERF_EVENT_IOC_DISABLE, 0);
  }
  for (const memory::ScopedFd& fd : events_) ioctl(fd.get(), PERF_EVENT_IOC_DISABLE, 0);
}

bool LiveSampler::ProcessAlive() const { return kill(pid_, 0) == 0 || errno == EPERM; }

void LiveSampler::Drain(Ring& ring, std::vector<std::vector<uint8_t>>& out) {
  perf_event_mmap_page* meta = ring.meta();
  const uint64_t size = meta->data_size;
  // The kernel publishes data_head with a release store; everything before
  // it is written.
  const uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
  uint64_t tail = meta->data_tail;
  const uint8_t* data = ring.data();
  while (tail + sizeof(perf_event_header) <= head) {
    perf_event_header h;
    for (size_t i = 0; i < sizeof(h); ++i) {
      reinterpret_cast<uint8_t*>(&h)[i] = data[(tail + i) % size];
    }
    if (h.size < sizeof(h) || tail + h.size > head) break;  // corrupt or partial
    std::vector<uint8_t> rec(h.size);
    const uint64_t start = tail % size;
    const uint64_t first = std::min<uint64_t>(h.size, size - start);
    std::memcpy(rec.data(), data + start, first);
    if (first < h.size) std::memcpy(rec.data() + first, data, h.size - first);
    out.push_back(std::move(rec));
    tail += h.size;
  }
  __atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
}

absl::Status LiveSampler::Synthesize(EventHandler& handler) {
  // What perf record synthesizes from /proc before the events run: the
  // process's mappings (as MMAP2) and every thread's name (as COMM).
  absl::StatusOr<std::vector<Mapping>> maps = ReadMaps(pid_);
  if (!maps.ok()) return maps.status();
  for (const Mapping& m : *maps) {
    Event e;
    e.type = kRecordMmap2;
    e.attr_index = 0;
    e.mmap.pid = static_cast<uint32_t>(pid_);
    e.mmap.tid = static_cast<uint32_t>(pid_);
    e.mmap.start = m.start;
    e.mmap.len = m.end - m.start;
    e.mmap.pgoff = m.offset;
    e.mmap.is_mmap2 = true;
    e.mmap.maj = m.dev_major;
    e.mmap.min = m.dev_minor;
    e.mmap.ino = m.inode;
    e.mmap.prot = (m.read ? PROT_READ : 0) | (m.write ? PROT_WRITE : 0) | (m.exec ? PROT_EXEC : 0);
    e.mmap.flags = m.shared ? MAP_SHARED : MAP_PRIVATE;
    const std::string name = m.path.empty() ? "//anon" : m.path;
    e.mmap.filename = name;
    absl::Status s = handler.OnEvent(e);
    if (!s.ok()) return s;
  }
  for (pid_t tid : Tasks(pid_)) {
    const std::string comm = ReadComm(pid_, tid);
    Event e;
    e.type = kRecordComm;
    e.attr_index = 0;
    e.comm.pid = static_cast<uint32_t>(pid_);
    e.comm.tid = static_cast<uint32_t>(tid);
    e.comm.comm = comm;
    absl::Status s = handler.OnEvent(e);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status LiveSampler::Poll(EventHandler& handler, absl::Duration timeout) {
  if (!synthesized_) {
    synthesized_ = true;
    absl::Status s = Synthesize(handler);
    if (!s.ok()) return s;
  }
  if (timeout > absl::ZeroDuration()) {
    std::vector<pollfd> fds;
    for (const std::unique_ptr<Ring>& r : rings_) fds.push_back({r->fd.get(), POLLIN, 0});
    const int ms = static_cast<int>(std::min<int64_t>(absl::ToInt64Milliseconds(timeout), 60000));
    while (poll(fds.data(), fds.size(), ms) < 0 && errno == EINTR) {
    }
  }
  std::vector<std::vector<uint8_t>> records;
  for (const std::unique_ptr<Ring>& r : rings_) Drain(*r, records);
  // One buffer per CPU: merge them by time (perf's ordered events do
  // the same across buffers). Records without a time sort first.
  std::vector<Event> events(records.size());
  std::vector<size_t> order;
  for (size_t i = 0; i < records.size(); ++i) {
    if (DecodeEvent(records[i], attrs_, 0, events[i]).ok()) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return events[a].id.time < events[b].id.time;
  });
  for (size_t i : order) {
    if (events[i].type == kRecordSample) ++samples_;
    if (events[i].type == kRecordLost) lost_ += events[i].lost.lost;
    absl::Status s = handler.OnEvent(events[i]);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace unwindd::proc::perf
