#include "proc/jit/jit_code.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "proc/jit/genelf.h"

namespace unwindd::proc::jit {
namespace {

// A laid-over mapping and, for a JIT region's, its image.
struct Laid {
  Mapping mapping;
  std::shared_ptr<const CodeImage> code;
};

// Lays `m` over `laid` (keyed by start): what it covers goes, the parts of
// older mappings on either side stay (their file offsets moved along).
void Overlay(std::map<uint64_t, Laid>& laid, Laid m) {
  const uint64_t start = m.mapping.start, end = m.mapping.end;
  auto it = laid.upper_bound(start);
  if (it != laid.begin()) --it;
  while (it != laid.end() && it->second.mapping.start < end) {
    Laid old = it->second;
    if (old.mapping.end <= start) {
      ++it;
      continue;
    }
    it = laid.erase(it);
    if (old.mapping.start < start) {
      Laid left = old;
      left.mapping.end = start;
      laid.emplace(left.mapping.start, std::move(left));
    }
    if (old.mapping.end > end) {
      Laid right = old;
      right.mapping.offset += end - old.mapping.start;
      right.mapping.start = end;
      it = laid.emplace(right.mapping.start, std::move(right)).first;
      ++it;
    }
  }
  laid.emplace(start, std::move(m));
}

std::map<uint64_t, Laid> LayOverMap(std::vector<Mapping> mappings,
                                    const std::vector<JitRegion>& regions) {
  std::map<uint64_t, Laid> laid;
  for (Mapping& m : mappings) {
    const uint64_t start = m.start;
    laid.emplace(start, Laid{std::move(m), nullptr});
  }
  for (const JitRegion& r : regions) Overlay(laid, Laid{r.mapping, r.code});
  return laid;
}

class JitTarget final : public ForwardingTarget {
 public:
  JitTarget(Target& inner, const std::vector<JitRegion>& regions) : ForwardingTarget(inner) {
    for (auto& [start, l] : LayOverMap(inner.mappings(), regions)) {
      mappings_.push_back(l.mapping);
      if (l.code != nullptr) codes_.emplace(start, l.code);
    }
  }
  const std::vector<Mapping>& mappings() const override { return mappings_; }
  std::shared_ptr<const CodeImage> CodeImageFor(const Mapping& m) const override {
    auto it = codes_.find(m.start);
    return it == codes_.end() ? ForwardingTarget::CodeImageFor(m) : it->second;
  }

 private:
  std::vector<Mapping> mappings_;
  std::map<uint64_t, std::shared_ptr<const CodeImage>> codes_;
};

}  // namespace

absl::StatusOr<std::vector<JitRegion>> JitRegions(const JitDump& dump, absl::string_view dir) {
  std::vector<JitRegion> out;
  out.reserve(dump.codes.size());
  for (const JitCode& c : dump.codes) {
    absl::StatusOr<std::shared_ptr<const std::vector<uint8_t>>> image =
        BuildJitElf(c, dump.elf_mach);
    if (!image.ok()) return image.status();
    out.push_back({JitMapping(c, dump.pid, dir),
                   std::make_shared<const CodeImage>(CodeImage{*std::move(image), c.name}),
                   c.time});
  }
  return out;
}

absl::StatusOr<std::vector<JitRegion>> LoadJitDumpFile(int fd, uint64_t max_bytes,
                                                       absl::string_view dump_path) {
  struct stat st;
  if (fstat(fd, &st) != 0) return absl::ErrnoToStatus(errno, "fstat");
  if (!S_ISREG(st.st_mode)) return absl::FailedPreconditionError("not a regular file");
  auto bytes = std::make_shared<std::vector<uint8_t>>(
      std::min<uint64_t>(static_cast<uint64_t>(st.st_size), max_bytes));
  size_t got = 0;
  while (got < bytes->size()) {
    const ssize_t n = pread(fd, bytes->data() + got, bytes->size() - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return absl::ErrnoToStatus(errno, "read");
    if (n == 0) break;  // shorter now: what there is
    got += static_cast<size_t>(n);
  }
  bytes->resize(got);
  absl::StatusOr<JitDump> dump = ParseJitDump(std::move(bytes));
  if (!dump.ok()) return dump.status();
  const size_t slash = dump_path.rfind('/');
  return JitRegions(*dump, slash == absl::string_view::npos ? absl::string_view()
                                                              : dump_path.substr(0, slash + 1));
}

std::vector<Mapping> LayOver(std::vector<Mapping> mappings, const std::vector<JitRegion>& regions) {
  std::vector<Mapping> out;
  for (auto& [start, l] : LayOverMap(std::move(mappings), regions)) out.push_back(l.mapping);
  return out;
}

std::unique_ptr<Target> WithJitCode(Target& inner, std::vector<JitRegion> regions) {
  return std::make_unique<JitTarget>(inner, regions);
}

std::vector<JitRegion> FindJitCode(const Target& target, std::vector<std::string>* warnings,
                                   uint64_t max_bytes) {
  std::vector<JitRegion> out;
  uint64_t left = max_bytes;  // for every dump together
  std::set<std::string> seen;
  for (const Mapping& m : target.mappings()) {
    if (!IsJitDumpPath(m.path) || !seen.insert(m.path).second) continue;
    if (left == 0) {
      if (warnings != nullptr) {
        warnings->push_back(absl::StrCat("JIT code in ", m.path, " not used: past the limit of ",
                                         max_bytes, " bytes of jitdumps"));
      }
      continue;
    }
    absl::Status last = absl::NotFoundError("no file to read");
    bool read = false;
    for (const std::string& path : target.FileCandidates(m)) {
      // Non-blocking: the path a target names may be a FIFO by now, which
      // must not hang us (LoadJitDumpFile then refuses what is not a
      // regular file).
      const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
      if (fd < 0) {
        last = absl::ErrnoToStatus(errno, absl::StrCat("open ", path));
        continue;
      }
      struct stat st;
      const uint64_t size = fstat(fd, &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
      absl::StatusOr<std::vector<JitRegion>> r = LoadJitDumpFile(fd, left, m.path);
      close(fd);
      left -= std::min(left, size);
      if (!r.ok()) {
        last = r.status();
        continue;
      }
      for (JitRegion& region : *r) out.push_back(std::move(region));
      read = true;
      break;
    }
    if (!read && warnings != nullptr) {
      warnings->push_back(absl::StrCat("JIT code in ", m.path, " not used: ", last.message()));
    }
  }
  return out;
}

}  // namespace unwindd::proc::jit
