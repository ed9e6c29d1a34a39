// Reads systemd-coredump's entries from the journal with libsystemd's
// sd-journal, as coredumpctl does: the system journal (this machine's,
// SD_JOURNAL_LOCAL_ONLY), one or more journal files, or a directory of
// them; entries with MESSAGE_ID SD_MESSAGE_COREDUMP or
// SD_MESSAGE_BACKTRACE, and MATCH's field; the newest one.
//
//   JournalSource src{.files = {"x.journal"}};
//   absl::StatusOr<CoredumpEntry> e = NewestCoredump(src, match, {});
//
// Links libsystemd (shared only in Debian): only the glibc-shared
// `unwind_coredump` has it (service/cli/coredump_entry.h).
#ifndef UNWINDD_PROC_COREDUMP_JOURNAL_H_
#define UNWINDD_PROC_COREDUMP_JOURNAL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "proc/coredump/entry.h"
#include "proc/coredump/match.h"

namespace unwindd::proc::coredump {

struct JournalSource {
  std::vector<std::string> files;  // sd_journal_open_files
  std::string directory;           // sd_journal_open_directory
  // Neither: the system journal (sd_journal_open, local only).
};

struct JournalOptions {
  // The largest core the journal itself may hand us (its COREDUMP field);
  // ResourceExhausted past it. systemd's own limit (JournalSizeMax) is
  // 767 MiB.
  uint64_t max_core_bytes = uint64_t{1} << 30;
};

// NotFound when no entry matches; PermissionDenied / the journal's own
// errors otherwise.
absl::StatusOr<CoredumpEntry> NewestCoredump(const JournalSource& source,
                                             const std::optional<JournalMatch>& match,
                                             const JournalOptions& options);

// Where `source` is, for messages ("x.journal", "the system journal").
std::string DescribeSource(const JournalSource& source);

}  // namespace unwindd::proc::coredump

#endif  // UNWINDD_PROC_COREDUMP_JOURNAL_H_
