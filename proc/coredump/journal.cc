#include "proc/coredump/journal.h"

#include <systemd/sd-journal.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace unwindd::proc::coredump {
namespace {

absl::Status JournalError(int r, absl::string_view what) {
  return absl::ErrnoToStatus(-r, what);
}

struct JournalCloser {
  void operator()(sd_journal* j) const { sd_journal_close(j); }
};

}  // namespace

std::string DescribeSource(const JournalSource& source) {
  if (!source.files.empty()) return absl::StrJoin(source.files, ", ");
  if (!source.directory.empty()) return source.directory;
  return "the system journal";
}

absl::StatusOr<CoredumpEntry> NewestCoredump(const JournalSource& source,
                                             const std::optional<JournalMatch>& match,
                                             const JournalOptions& options) {
  sd_journal* raw = nullptr;
  int r = 0;
  // SD_JOURNAL_ASSUME_IMMUTABLE (v254) is not in Debian 12's v252.
  if (!source.files.empty()) {
    std::vector<const char*> paths;
    for (const std::string& f : source.files) paths.push_back(f.c_str());
    paths.push_back(nullptr);
    r = sd_journal_open_files(&raw, paths.data(), 0);
  } else if (!source.directory.empty()) {
    r = sd_journal_open_directory(&raw, source.directory.c_str(), 0);
  } else {
    r = sd_journal_open(&raw, SD_JOURNAL_LOCAL_ONLY);
  }
  if (r < 0) {
    return JournalError(r, absl::StrCat("opening ", DescribeSource(source)));
  }
  std::unique_ptr<sd_journal, JournalCloser> j(raw);
  // Two values of one field are OR'ed, different fields AND'ed.
  for (absl::string_view id : {kMessageCoredump, kMessageBacktrace}) {
    const std::string m = absl::StrCat("MESSAGE_ID=", id);
    if ((r = sd_journal_add_match(j.get(), m.data(), m.size())) < 0) {
      return JournalError(r, "sd_journal_add_match");
    }
  }
  if (match) {
    const std::string m = match->ToString();
    if ((r = sd_journal_add_match(j.get(), m.data(), m.size())) < 0) {
      return JournalError(r, absl::StrCat("the match ", m));
    }
  }
  // coredumpctl's focus(): the newest matching entry.
  r = sd_journal_seek_tail(j.get());
  if (r >= 0) r = sd_journal_previous(j.get());
  if (r < 0) return JournalError(r, absl::StrCat("searching ", DescribeSource(source)));
  if (r == 0) {
    return absl::NotFoundError(absl::StrCat(
        "no coredump entry", match ? absl::StrCat(" matches ", match->ToString()) : "",
        " in ", DescribeSource(source)));
  }
  // Fields longer than the threshold come back cut; the core (COREDUMP)
  // may be large, and a cut core is worse than none.
  const uint64_t threshold = options.max_core_bytes + sizeof("COREDUMP=");
  if ((r = sd_journal_set_data_threshold(j.get(), threshold)) < 0) {
    return JournalError(r, "sd_journal_set_data_threshold");
  }
  CoredumpEntry entry;
  const void* data = nullptr;
  size_t len = 0;
  sd_journal_restart_data(j.get());
  while ((r = sd_journal_enumerate_data(j.get(), &data, &len)) > 0) {
    const absl::string_view field(static_cast<const char*>(data), len);
    if (field.substr(0, 9) == "COREDUMP=" && len >= threshold) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "the core stored in the journal is larger than ", options.max_core_bytes,
          " bytes"));
    }
    absl::Status s = entry.AddField(field);
    if (absl::IsResourceExhausted(s)) return s;
    // A malformed field (another writer's) is skipped, as coredumpctl does.
  }
  if (r < 0) return JournalError(r, "reading the entry's fields");
  char* cursor = nullptr;
  if (sd_journal_get_cursor(j.get(), &cursor) >= 0 && cursor != nullptr) {
    entry.cursor = cursor;
    free(cursor);
  }
  uint64_t usec = 0;
  if (sd_journal_get_realtime_usec(j.get(), &usec) >= 0) entry.realtime_usec = usec;
  return entry;
}

}  // namespace unwindd::proc::coredump
