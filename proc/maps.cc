#include "proc/maps.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "proc/procfs.h"

namespace unwindd::proc {
namespace {

// A process can have up to vm.max_map_count (65530 by default) mappings of
// ~100-300 bytes each; this leaves room for raised limits while bounding
// what a hostile or huge target makes us allocate.
constexpr size_t kMaxMapsBytes = 256 << 20;

// The next space-delimited field; advances `rest` past it and the spaces
// after it.
absl::string_view NextField(absl::string_view& rest) {
  size_t end = rest.find(' ');
  if (end == absl::string_view::npos) end = rest.size();
  absl::string_view field = rest.substr(0, end);
  while (end < rest.size() && absl::ascii_isspace(static_cast<unsigned char>(rest[end]))) {
    ++end;
  }
  rest.remove_prefix(end);
  return field;
}

// The kernel prints hex without 0x, decimal for the inode (fs/proc/
// task_mmu.c show_map_vma). SimpleHexAtoi would also take "0x" and signs,
// which never appear, so check the digits ourselves.
bool ParseHex(absl::string_view s, uint64_t* out) {
  // At most 16 digits, so the value cannot overflow (a whole maps file is
  // a few thousand of these: no general-purpose parser per field).
  if (s.empty() || s.size() > 16) return false;
  uint64_t v = 0;
  for (char c : s) {
    int d;
    if (c >= '0' && c <= '9') {
      d = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      d = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
      d = c - 'A' + 10;
    } else {
      return false;
    }
    v = v << 4 | static_cast<uint64_t>(d);
  }
  *out = v;
  return true;
}

bool ParseHex32(absl::string_view s, uint32_t* out) {
  uint64_t v;
  if (!ParseHex(s, &v) || v > UINT32_MAX) return false;
  *out = static_cast<uint32_t>(v);
  return true;
}

absl::Status BadLine(int line_no, absl::string_view line,
                     absl::string_view what) {
  return absl::DataLossError(
      absl::StrFormat("maps line %d: %s: \"%s\"", line_no, what,
                      absl::CHexEscape(line.substr(0, 200))));
}

absl::StatusOr<Mapping> ParseLine(int line_no, absl::string_view line) {
  // "start-end perms offset major:minor inode [padding path]"
  absl::string_view rest = line;
  absl::string_view range = NextField(rest);
  absl::string_view perms = NextField(rest);
  absl::string_view offset = NextField(rest);
  absl::string_view dev = NextField(rest);
  absl::string_view inode = NextField(rest);
  if (inode.empty()) return BadLine(line_no, line, "missing fields");

  Mapping m;
  std::pair<absl::string_view, absl::string_view> se =
      absl::StrSplit(range, absl::MaxSplits('-', 1));
  if (!ParseHex(se.first, &m.start) || !ParseHex(se.second, &m.end) ||
      m.end < m.start) {
    return BadLine(line_no, line, "bad address range");
  }
  if (perms.size() != 4 || (perms[0] != 'r' && perms[0] != '-') ||
      (perms[1] != 'w' && perms[1] != '-') ||
      (perms[2] != 'x' && perms[2] != '-') ||
      (perms[3] != 's' && perms[3] != 'p')) {
    return BadLine(line_no, line, "bad permissions");
  }
  m.read = perms[0] == 'r';
  m.write = perms[1] == 'w';
  m.exec = perms[2] == 'x';
  m.shared = perms[3] == 's';
  if (!ParseHex(offset, &m.offset)) {
    return BadLine(line_no, line, "bad offset");
  }
  std::pair<absl::string_view, absl::string_view> mm =
      absl::StrSplit(dev, absl::MaxSplits(':', 1));
  if (!ParseHex32(mm.first, &m.dev_major) ||
      !ParseHex32(mm.second, &m.dev_minor)) {
    return BadLine(line_no, line, "bad device");
  }
  if (!absl::SimpleAtoi(inode, &m.inode)) {
    return BadLine(line_no, line, "bad inode");
  }
  // The rest, after the padding NextField skipped, is the path verbatim:
  // it may contain spaces, even trailing ones (the kernel escapes only '\n',
  // as "\012"). Empty for anonymous mappings.
  absl::string_view path = rest;
  // The kernel appends " (deleted)" to unlinked files (d_path), and memfd
  // names carry it too.
  if (absl::ConsumeSuffix(&path, " (deleted)")) m.deleted = true;
  m.path = std::string(path);
  return m;
}

}  // namespace

absl::StatusOr<std::vector<Mapping>> ParseMaps(absl::string_view text) {
  std::vector<Mapping> out;
  out.reserve(std::count(text.begin(), text.end(), '\n') + 1);
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    if (line.empty()) continue;  // the final newline
    absl::StatusOr<Mapping> m = ParseLine(line_no, line);
    if (!m.ok()) return m.status();
    out.push_back(*std::move(m));
  }
  return out;
}

absl::StatusOr<std::vector<Mapping>> ReadMaps(pid_t pid) {
  absl::StatusOr<std::string> text =
      ReadProcFile(pid, ProcPath(pid, "maps"), kMaxMapsBytes);
  if (!text.ok()) return text.status();
  absl::StatusOr<std::vector<Mapping>> maps = ParseMaps(*text);
  if (!maps.ok()) {
    return absl::Status(
        maps.status().code(),
        absl::StrFormat("/proc/%d/maps: %s", pid, maps.status().message()));
  }
  return maps;
}

}  // namespace unwindd::proc
