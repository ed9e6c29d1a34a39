#include "proc/jit/perf_map.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <iterator>
#include <map>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace unwindd::proc::jit {
namespace {

// A hex number at the start of `*s` (an optional "0x"), then one or more
// spaces or tabs; consumes both.
bool TakeHex(absl::string_view* s, uint64_t* out) {
  absl::ConsumePrefix(s, "0x") || absl::ConsumePrefix(s, "0X");
  size_t n = 0;
  while (n < s->size() && absl::ascii_isxdigit(static_cast<unsigned char>((*s)[n]))) ++n;
  if (n == 0 || n > 16 || !absl::SimpleHexAtoi(s->substr(0, n), out)) return false;
  s->remove_prefix(n);
  size_t blanks = 0;
  while (blanks < s->size() && ((*s)[blanks] == ' ' || (*s)[blanks] == '\t')) ++blanks;
  if (blanks == 0) return false;
  s->remove_prefix(blanks);
  return true;
}

// `entries` in file order, laid over one another: each replaces what it
// covers of earlier ones, whose parts on either side stay.
std::vector<PerfMapEntry> LayOver(std::vector<PerfMapEntry> entries) {
  bool sorted_apart = true;
  for (size_t i = 1; i < entries.size() && sorted_apart; ++i) {
    sorted_apart = entries[i - 1].end <= entries[i].start;
  }
  if (sorted_apart) return entries;  // the common case: nothing to lay over
  std::map<uint64_t, PerfMapEntry> laid;
  for (PerfMapEntry& e : entries) {
    auto it = laid.upper_bound(e.start);
    if (it != laid.begin()) --it;
    while (it != laid.end() && it->second.start < e.end) {
      if (it->second.end <= e.start) {
        ++it;
        continue;
      }
      PerfMapEntry old = std::move(it->second);
      it = laid.erase(it);
      if (old.start < e.start) {
        PerfMapEntry left{old.start, e.start, old.name};
        laid.emplace(left.start, std::move(left));
      }
      if (old.end > e.end) {
        PerfMapEntry right{e.end, old.end, std::move(old.name)};
        it = std::next(laid.emplace(right.start, std::move(right)).first);
      }
    }
    const uint64_t start = e.start;
    laid.emplace(start, std::move(e));
  }
  std::vector<PerfMapEntry> out;
  out.reserve(laid.size());
  for (auto& [start, e] : laid) out.push_back(std::move(e));
  return out;
}

}  // namespace

PerfMap PerfMap::Parse(absl::string_view text) {
  PerfMap map;
  std::vector<PerfMapEntry> entries;
  // A last line without its newline may still be being written.
  const size_t last_newline = text.rfind('\n');
  if (last_newline != text.size() - 1) {
    if (!text.empty()) ++map.skipped_;
    text = last_newline == absl::string_view::npos ? absl::string_view()
                                                   : text.substr(0, last_newline + 1);
  }
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    absl::ConsumeSuffix(&line, "\r");
    uint64_t start = 0, size = 0;
    absl::string_view rest = line;
    if (!TakeHex(&rest, &start) || !TakeHex(&rest, &size) || size == 0 ||
        start + size < start || rest.empty()) {
      ++map.skipped_;
      continue;
    }
    entries.push_back({start, start + size, std::string(rest.substr(0, kMaxPerfMapName))});
  }
  map.entries_ = LayOver(std::move(entries));
  return map;
}

absl::StatusOr<PerfMap> PerfMap::Load(const std::string& path, uint64_t max_bytes) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) return absl::ErrnoToStatus(errno, absl::StrCat("open ", path));
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return absl::FailedPreconditionError(absl::StrCat(path, ": not a regular file"));
  }
  std::string text(std::min<uint64_t>(static_cast<uint64_t>(st.st_size), max_bytes), '\0');
  size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = pread(fd, text.data() + got, text.size() - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int e = errno;
      close(fd);
      return absl::ErrnoToStatus(e, absl::StrCat("read ", path));
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  close(fd);
  text.resize(got);
  PerfMap map = Parse(text);
  map.file_bytes_ = got;
  return map;
}

PerfMaps::PerfMaps(std::function<std::string(pid_t)> path_of, size_t max_processes,
                   uint64_t max_bytes)
    : path_of_(std::move(path_of)), max_processes_(max_processes), bytes_left_(max_bytes) {}

const PerfMap* PerfMaps::Get(pid_t pid) {
  absl::MutexLock lock(&mu_);
  if (auto it = maps_.find(pid); it != maps_.end()) return it->second.get();
  if (maps_.size() >= max_processes_) return nullptr;
  std::unique_ptr<const PerfMap> map;
  if (bytes_left_ > 0) {
    absl::StatusOr<PerfMap> loaded = PerfMap::Load(path_of_(pid), bytes_left_);
    if (loaded.ok()) {
      bytes_left_ -= std::min(bytes_left_, loaded->file_bytes());
      map = std::make_unique<const PerfMap>(*std::move(loaded));
    }
  }
  return maps_.emplace(pid, std::move(map)).first->second.get();
}

const PerfMapEntry* PerfMap::Find(uint64_t address) const {
  auto it = std::upper_bound(entries_.begin(), entries_.end(), address,
                             [](uint64_t a, const PerfMapEntry& e) { return a < e.start; });
  if (it == entries_.begin()) return nullptr;
  --it;
  return address < it->end ? &*it : nullptr;
}

std::string PerfMapPath(pid_t pid) { return absl::StrCat("/tmp/perf-", pid, ".map"); }

bool NamedByPerfMap(const Mapping& m) {
  if (!m.exec) return false;
  const std::string& p = m.path;
  return p.empty() || p == "//anon" || absl::StartsWith(p, "/dev/zero") ||
         absl::StartsWith(p, "/anon_hugepage") || absl::StartsWith(p, "[stack") ||
         p == "[heap]" || absl::StartsWith(p, "/SYSV");
}

pid_t PerfMapPid(absl::string_view path) {
  int pid = 0;
  if (!absl::ConsumePrefix(&path, "/tmp/perf-") || !absl::ConsumeSuffix(&path, ".map") ||
      !absl::SimpleAtoi(path, &pid) || pid <= 0) {
    return 0;
  }
  return pid;
}

std::string LivePerfMapPath(pid_t pid) {
  pid_t inner = pid;
  const int fd = open(absl::StrCat("/proc/", pid, "/status").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    char buf[4096];
    const ssize_t n = read(fd, buf, sizeof(buf));
    close(fd);
    if (n > 0) {
      for (absl::string_view line : absl::StrSplit(absl::string_view(buf, n), '\n')) {
        if (!absl::ConsumePrefix(&line, "NSpid:")) continue;
        // The PID in each namespace, outermost first: the last is its own.
        std::vector<absl::string_view> ids =
            absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
        int value = 0;
        if (!ids.empty() && absl::SimpleAtoi(ids.back(), &value) && value > 0) inner = value;
      }
    }
  }
  return absl::StrCat("/proc/", pid, "/root/tmp/perf-", inner, ".map");
}

}  // namespace unwindd::proc::jit
