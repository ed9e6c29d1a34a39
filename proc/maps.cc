#include "proc/maps.h"

#include <array>
#include <cstring>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
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
// Each character's hex digit value, -1 for a character that is none.
constexpr std::array<int8_t, 256> kHexDigits = [] {
  std::array<int8_t, 256> t{};
  for (int c = 0; c < 256; ++c) {
    t[c] = c >= '0' && c <= '9'   ? static_cast<int8_t>(c - '0')
           : c >= 'a' && c <= 'f' ? static_cast<int8_t>(c - 'a' + 10)
           : c >= 'A' && c <= 'F' ? static_cast<int8_t>(c - 'A' + 10)
                                  : int8_t{-1};
  }
  return t;
}();

bool ParseHex(absl::string_view s, uint64_t* out) {
  // At most 16 digits, so the value cannot overflow (a whole maps file is
  // a few thousand of these: no general-purpose parser per field).
  if (s.empty() || s.size() > 16) return false;
  uint64_t v = 0;
  for (char c : s) {
    const int8_t d = kHexDigits[static_cast<uint8_t>(c)];
    if (d < 0) return false;
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

// The two halves of `field` around its first `sep`; false if it has none.
bool SplitAt(absl::string_view field, char sep, absl::string_view* first,
             absl::string_view* second) {
  const size_t at = field.find(sep);
  if (at == absl::string_view::npos) return false;
  *first = field.substr(0, at);
  *second = field.substr(at + 1);
  return true;
}

// Parses `line` into `m` (a default Mapping).
absl::Status ParseLine(int line_no, absl::string_view line, Mapping& m) {
  // "start-end perms offset major:minor inode [padding path]"
  absl::string_view rest = line;
  absl::string_view range = NextField(rest);
  absl::string_view perms = NextField(rest);
  absl::string_view offset = NextField(rest);
  absl::string_view dev = NextField(rest);
  absl::string_view inode = NextField(rest);
  if (inode.empty()) return BadLine(line_no, line, "missing fields");

  absl::string_view start, end;
  if (!SplitAt(range, '-', &start, &end) || !ParseHex(start, &m.start) ||
      !ParseHex(end, &m.end) || m.end < m.start) {
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
  absl::string_view major, minor;
  if (!SplitAt(dev, ':', &major, &minor) || !ParseHex32(major, &m.dev_major) ||
      !ParseHex32(minor, &m.dev_minor)) {
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
  m.path.assign(path.data(), path.size());
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<Mapping>> ParseMaps(absl::string_view text) {
  // Lines are found with memchr, once to count them (the vector's size)
  // and once to parse them.
  auto next_line = [&text](size_t from) -> size_t {
    if (from >= text.size()) return text.size();
    const void* nl = std::memchr(text.data() + from, '\n', text.size() - from);
    return nl == nullptr ? text.size() : static_cast<size_t>(static_cast<const char*>(nl) - text.data());
  };
  size_t lines = 0;
  for (size_t at = 0; at < text.size(); at = next_line(at) + 1) ++lines;
  std::vector<Mapping> out;
  out.reserve(lines);
  int line_no = 0;
  for (size_t at = 0; at <= text.size();) {
    const size_t end = next_line(at);
    const absl::string_view line = text.substr(at, end - at);
    at = end + 1;
    ++line_no;
    if (line.empty()) continue;  // the final newline
    absl::Status s = ParseLine(line_no, line, out.emplace_back());
    if (!s.ok()) return s;
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
