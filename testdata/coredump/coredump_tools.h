// systemd's tools for the coredump tests (scripts/systemd_tools.sh unpacks
// them from Debian's packages) and the journal entries the tests give
// them: systemd-journal-remote turns entries in the journal export format
// into a journal file, and coredumpctl says which entry a MATCH picks and
// what its metadata is.
//
//   absl::StatusOr<std::string> sd = SystemdTools();   // Unavailable: skip
//   std::string exported = ExportEntry({{"COREDUMP_PID", "42"}, ...});
//   absl::Status s = WriteJournal(*sd, exported, dir + "/x.journal");
//   absl::StatusOr<CoredumpctlInfo> info = CoredumpctlInfo(*sd, journal, "42");
#ifndef UNWINDD_TESTDATA_COREDUMP_COREDUMP_TOOLS_H_
#define UNWINDD_TESTDATA_COREDUMP_COREDUMP_TOOLS_H_

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace unwindd::harness {

// The directory scripts/systemd_tools.sh prints; Unavailable (skip) when
// Debian's archive cannot be reached.
absl::StatusOr<std::string> SystemdTools();

// One entry in the journal export format (systemd's
// docs/JOURNAL_EXPORT_FORMATS.md): "NAME=value\n", or for a value with a
// newline or other control bytes "NAME\n", its length as a little-endian
// u64, the bytes and "\n"; a blank line ends the entry.
std::string ExportEntry(const std::vector<std::pair<std::string, std::string>>& fields);

// `systemd-journal-remote --output=JOURNAL -` fed `exported`.
absl::Status WriteJournal(const std::string& tools, const std::string& exported,
                          const std::string& journal);

// `coredumpctl --file=JOURNAL -1 info [MATCH]` (the newest matching entry)
// with TZ=UTC: its "Label: value" lines (a continued Message keeps only
// its first line). NotFound when coredumpctl finds no entry.
using CoredumpctlInfo = std::map<std::string, std::string>;
absl::StatusOr<CoredumpctlInfo> Coredumpctl(const std::string& tools,
                                             const std::string& journal,
                                             const std::string& match);

}  // namespace unwindd::harness

#endif  // UNWINDD_TESTDATA_COREDUMP_COREDUMP_TOOLS_H_
