// CreateProcessMemory: picks the cheapest mechanism that can actually read
// the target's memory.
//
// A zero-length read proves nothing (process_vm_readv returns 0 before any
// permission check), so each candidate is probed with a one-byte read at the
// start of a readable mapping from /proc/PID/maps. The first mechanism that
// reads any probe address wins, in order of cost: process_vm_readv (one
// syscall per read), pread on /proc/PID/mem (one syscall, plus an fd),
// PTRACE_PEEKDATA (one syscall per word, only for the tracer).
#include <fcntl.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "memory/factories.h"
#include "memory/memory.h"
#include "memory/scoped_fd.h"

namespace unwindd::memory {
namespace {

// A few candidates are enough: one of the first mappings (the executable's
// headers, the heap, libc) is readable unless the process is gone.
constexpr size_t kMaxProbes = 8;
// The first lines of /proc/PID/maps; we need only a handful.
constexpr size_t kMapsPrefixBytes = 16 * 1024;

// Start addresses of the first readable mappings of `pid`. [vvar] is
// skipped: it is marked readable but is a PFN map that no mechanism reads.
std::vector<uint64_t> ProbeAddresses(pid_t pid) {
  std::vector<uint64_t> out;
  std::string path = "/proc/" + std::to_string(pid) + "/maps";
  ScopedFd fd = OpenCloexec(path.c_str(), O_RDONLY);
  if (!fd.valid()) return out;
  std::string text(kMapsPrefixBytes, '\0');
  size_t len = 0;
  while (len < text.size()) {
    ssize_t n = read(fd.get(), text.data() + len, text.size() - len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    len += static_cast<size_t>(n);
  }
  text.resize(len);
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (out.size() >= kMaxProbes) break;
    // "start-end perms offset dev inode [path]"; the last line may be cut.
    std::vector<absl::string_view> f =
        absl::StrSplit(line, absl::MaxSplits(' ', 2));
    if (f.size() < 3 || f[1].empty() || f[1][0] != 'r') continue;
    if (absl::StrContains(line, "[vvar")) continue;
    uint64_t start;
    if (!absl::SimpleHexAtoi(f[0].substr(0, f[0].find('-')), &start)) continue;
    out.push_back(start);
  }
  return out;
}

bool CanRead(Memory& m, const std::vector<uint64_t>& probes) {
  for (uint64_t addr : probes) {
    uint8_t byte;
    if (m.Read(addr, absl::MakeSpan(&byte, 1)) == 1) return true;
  }
  return false;
}

}  // namespace

std::unique_ptr<Memory> CreateProcessMemory(pid_t pid) {
  return CreateProcessMemoryProbing(pid, ProbeAddresses(pid));
}

std::unique_ptr<Memory> CreateProcessMemoryProbing(
    pid_t pid, const std::vector<uint64_t>& probes) {
  using Factory = std::unique_ptr<Memory> (*)(pid_t);
  for (Factory create : {&CreateProcessVmReadvMemory, &CreateProcMemFileMemory,
                         &CreatePtracePeekMemory}) {
    std::unique_ptr<Memory> m = create(pid);
    if (CanRead(*m, probes)) return m;
  }
  // Nothing works (the process is gone, or we may not read it): every read
  // will return 0, which callers already handle as unreadable memory.
  return CreateProcessVmReadvMemory(pid);
}

}  // namespace unwindd::memory
