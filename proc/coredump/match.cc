#include "proc/coredump/match.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "proc/coredump/entry.h"

namespace unwindd::proc::coredump {

absl::StatusOr<JournalMatch> ParseCoredumpMatch(absl::string_view match,
                                                absl::string_view cwd) {
  if (match.empty()) return absl::InvalidArgumentError("empty coredump match");
  if (absl::StrContains(match, '=')) {
    absl::StatusOr<std::pair<absl::string_view, absl::string_view>> f = SplitField(match);
    if (!f.ok()) return f.status();
    return JournalMatch{std::string(f->first), std::string(f->second)};
  }
  // systemd's is_path(): contains a '/'.
  if (absl::StrContains(match, '/')) {
    std::string path(match);
    if (path[0] != '/') {
      // path_make_absolute_cwd(): the cwd joined with the path as given.
      path = absl::StrCat(cwd, absl::EndsWith(cwd, "/") ? "" : "/", match);
    }
    return JournalMatch{"COREDUMP_EXE", std::move(path)};
  }
  // parse_pid(): a positive decimal that fits a pid_t.
  uint32_t pid = 0;
  const bool digits = !match.empty() && std::all_of(match.begin(), match.end(), [](char c) {
    return absl::ascii_isdigit(static_cast<unsigned char>(c));
  });
  if (digits && absl::SimpleAtoi(match, &pid) && pid > 0 && pid <= INT32_MAX) {
    return JournalMatch{"COREDUMP_PID", std::string(match)};
  }
  return JournalMatch{"COREDUMP_COMM", std::string(match)};
}

}  // namespace unwindd::proc::coredump
