#include "memory/file_mapping.h"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "absl/strings/str_cat.h"

namespace unwindd::memory {
namespace {

// The handler's table: fixed size and lock-free, as a signal handler may
// neither lock nor allocate. A slot is free (begin 0), being filled or
// emptied (begin kBusy), or live (begin > kBusy, end set before begin is
// published). A live slot's range cannot be unmapped while a thread faults
// in it: the faulting thread is reading it, and its owner unregisters only
// once nobody reads it any more.
struct Slot {
  std::atomic<uintptr_t> begin{0};
  std::atomic<uintptr_t> end{0};
  std::atomic<uint32_t> changed{0};
  // The lowest page replaced by zeros (UINTPTR_MAX: none; Register sets
  // it, so that the table starts all zeros: in .bss, not 256 KiB of the
  // binary's data).
  std::atomic<uintptr_t> first_zeroed{0};
};
constexpr uintptr_t kBusy = 1;
// One per open module, debug file and perf.data; the module cache holds
// a few thousand at most. Past this, files are read into the heap.
constexpr size_t kSlots = 8192;
Slot g_slots[kSlots];
// Slots [0, g_high) may be live: bounds the handler's scan.
std::atomic<size_t> g_high{0};
std::atomic<size_t> g_live{0};
uintptr_t g_page_size = 4096;
struct sigaction g_previous;

// Async-signal-safe: atomics, mmap and sigaction only.
void OnSigbus(int sig, siginfo_t* info, void* context) {
  // BUS_ADRERR is what a read of a file page past EOF raises
  // (mm/filemap.c: VM_FAULT_SIGBUS -> arch fault handler).
  if (info != nullptr && info->si_code == BUS_ADRERR) {
    const uintptr_t addr = reinterpret_cast<uintptr_t>(info->si_addr);
    const size_t high = g_high.load(std::memory_order_acquire);
    for (size_t i = 0; i < high; ++i) {
      Slot& s = g_slots[i];
      const uintptr_t b = s.begin.load(std::memory_order_acquire);
      if (b <= kBusy || addr < b || addr >= s.end.load(std::memory_order_acquire)) {
        continue;
      }
      const int saved_errno = errno;
      void* page = reinterpret_cast<void*>(addr & ~(g_page_size - 1));
      void* p = mmap(page, g_page_size, PROT_READ | PROT_WRITE,
                     MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      errno = saved_errno;
      if (p == MAP_FAILED) break;
      uintptr_t first = s.first_zeroed.load(std::memory_order_relaxed);
      const uintptr_t at = reinterpret_cast<uintptr_t>(page);
      while (at < first && !s.first_zeroed.compare_exchange_weak(
                               first, at, std::memory_order_relaxed)) {
      }
      s.changed.store(1, std::memory_order_release);
      return;  // the faulting read runs again and reads zeros
    }
  }
  // Not ours: what would have happened without us.
  if (g_previous.sa_flags & SA_SIGINFO) {
    if (g_previous.sa_sigaction != nullptr) {
      g_previous.sa_sigaction(sig, info, context);
      return;
    }
  } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
    g_previous.sa_handler(sig);
    return;
  }
  struct sigaction dfl;
  std::memset(&dfl, 0, sizeof(dfl));
  dfl.sa_handler = SIG_DFL;
  sigaction(SIGBUS, &dfl, nullptr);
  // A fault runs again on return and now kills; a sent signal must be
  // raised again.
  if (info == nullptr || info->si_code <= 0) raise(SIGBUS);
}

absl::Status InstallHandler() {
  static const absl::Status installed = [] {
    const long page = sysconf(_SC_PAGESIZE);
    if (page > 0) g_page_size = static_cast<uintptr_t>(page);
    struct sigaction sa;
    std::memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = OnSigbus;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGBUS, &sa, &g_previous) != 0) {
      return absl::ErrnoToStatus(errno, "sigaction(SIGBUS)");
    }
    return absl::OkStatus();
  }();
  return installed;
}

// A free slot for [begin, end), or -1 if the table is full.
int Register(uintptr_t begin, uintptr_t end) {
  for (size_t i = 0; i < kSlots; ++i) {
    Slot& s = g_slots[i];
    // A plain load first: a failed compare-exchange per live slot would
    // cost more than the rest of a cold module open.
    if (s.begin.load(std::memory_order_relaxed) != 0) continue;
    uintptr_t expected = 0;
    if (!s.begin.compare_exchange_strong(expected, kBusy, std::memory_order_acq_rel)) {
      continue;
    }
    s.changed.store(0, std::memory_order_relaxed);
    s.first_zeroed.store(UINTPTR_MAX, std::memory_order_relaxed);
    s.end.store(end, std::memory_order_release);
    size_t high = g_high.load(std::memory_order_acquire);
    while (high < i + 1 &&
           !g_high.compare_exchange_weak(high, i + 1, std::memory_order_acq_rel)) {
    }
    s.begin.store(begin, std::memory_order_release);
    g_live.fetch_add(1, std::memory_order_relaxed);
    return static_cast<int>(i);
  }
  return -1;
}

void Unregister(int slot) {
  Slot& s = g_slots[slot];
  s.begin.store(kBusy, std::memory_order_release);
  s.end.store(0, std::memory_order_release);
  s.begin.store(0, std::memory_order_release);
  g_live.fetch_sub(1, std::memory_order_relaxed);
}

}  // namespace

absl::StatusOr<std::unique_ptr<FileMapping>> FileMapping::Map(int fd, uint64_t size,
                                                              absl::string_view name) {
  return MapOrCopy(fd, size, name, /*copy=*/true);
}

absl::StatusOr<std::unique_ptr<FileMapping>> FileMapping::MapOnly(int fd, uint64_t size,
                                                                  absl::string_view name) {
  return MapOrCopy(fd, size, name, /*copy=*/false);
}

absl::StatusOr<std::unique_ptr<FileMapping>> FileMapping::MapOrCopy(int fd, uint64_t size,
                                                                    absl::string_view name,
                                                                    bool copy) {
  std::unique_ptr<FileMapping> m(new FileMapping());
  m->name_ = std::string(name);
  if (size == 0) return m;
  if (size > SIZE_MAX / 2) {
    return absl::OutOfRangeError(absl::StrCat(name, ": too large to map"));
  }
  absl::Status handler = InstallHandler();
  if (handler.ok()) {
    // Writable only where a library may write (a copy on write); a
    // read-only mapping of a large file charges no commit for it.
    void* p = mmap(nullptr, size, copy ? PROT_READ | PROT_WRITE : PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      return absl::UnavailableError(
          absl::StrCat("mmap ", name, ": ", std::strerror(errno)));
    }
    const uintptr_t begin = reinterpret_cast<uintptr_t>(p);
    m->slot_ = Register(begin, begin + size);
    if (m->slot_ >= 0) {
      m->data_ = static_cast<uint8_t*>(p);
      m->size_ = size;
      m->map_length_ = size;
      return m;
    }
    munmap(p, size);
  }
  if (!copy) {
    return absl::UnavailableError(absl::StrCat(
        name, ": cannot be mapped safely (", handler.ok() ? "no room to guard it" : handler.message(),
        ")"));
  }
  // No room in the table (or no handler): a copy cannot fault.
  m->heap_.resize(size);
  size_t done = 0;
  while (done < size) {
    ssize_t n = pread(fd, m->heap_.data() + done, size - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return absl::UnavailableError(
          absl::StrCat("read ", name, ": ", std::strerror(errno)));
    }
    if (n == 0) {
      return absl::DataLossError(absl::StrCat(name, " changed while it was read"));
    }
    done += static_cast<size_t>(n);
  }
  m->data_ = m->heap_.data();
  m->size_ = size;
  return m;
}

FileMapping::~FileMapping() {
  if (slot_ >= 0) Unregister(slot_);
  if (map_length_ > 0) munmap(data_, map_length_);
}

bool FileMapping::changed() const {
  return marked_.load(std::memory_order_relaxed) ||
         (slot_ >= 0 && g_slots[slot_].changed.load(std::memory_order_relaxed) != 0);
}

uint64_t FileMapping::intact_bytes() const {
  if (marked_.load(std::memory_order_relaxed)) return 0;
  if (slot_ < 0) return size_;
  const uintptr_t first = g_slots[slot_].first_zeroed.load(std::memory_order_acquire);
  const uintptr_t begin = reinterpret_cast<uintptr_t>(data_);
  return first == UINTPTR_MAX || first < begin ? size_ : first - begin;
}

void FileMapping::MarkChanged() { marked_.store(true, std::memory_order_relaxed); }

absl::Status FileMapping::Check() const {
  if (!changed()) return absl::OkStatus();
  return absl::DataLossError(absl::StrCat(name_, " changed while it was read"));
}

void FileMapping::Release(uint64_t offset, uint64_t n) {
  if (map_length_ == 0 || offset >= size_) return;
  n = std::min<uint64_t>(n, size_ - offset);
  const uintptr_t begin = reinterpret_cast<uintptr_t>(data_) + offset;
  const uintptr_t first = (begin + g_page_size - 1) & ~(g_page_size - 1);
  const uintptr_t last = (begin + n) & ~(g_page_size - 1);
  // Private pages nobody wrote: dropped, they read the file again (and a
  // page the SIGBUS handler replaced reads zeros again).
  if (last > first) madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

size_t FileMapping::RegisteredForTest() { return g_live.load(std::memory_order_relaxed); }

}  // namespace unwindd::memory
