// `unwind coredump [MATCH]` (coredump_entry.h): the newest matching
// systemd-coredump entry's metadata, printed as coredumpctl info's, and its
// core, unwound as `unwind core` unwinds one.
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "proc/coredump/core_source.h"
#include "proc/coredump/journal.h"
#include "proc/coredump/match.h"
#include "service/cli/core_command.h"
#include "service/cli/coredump_entry.h"
#include "service/cli/coredump_facts.h"

namespace unwindd::service {
namespace {

int Fail(absl::string_view msg) {
  std::fprintf(stderr, "unwind: %.*s\n", static_cast<int>(msg.size()), msg.data());
  return 1;
}

}  // namespace

int RunCoredumpCommand(const Command& cmd, char** argv,
                       const std::atomic<bool>* cancel) {
  proc::coredump::JournalSource source;
  source.files = cmd.journal_files;
  source.directory = cmd.journal_directory;
  std::optional<proc::coredump::JournalMatch> match;
  if (!cmd.match.empty()) {
    char cwd[PATH_MAX];
    absl::StatusOr<proc::coredump::JournalMatch> m = proc::coredump::ParseCoredumpMatch(
        cmd.match, getcwd(cwd, sizeof(cwd)) != nullptr ? cwd : "/");
    if (!m.ok()) return Fail(m.status().message());
    match = *std::move(m);
  }
  absl::StatusOr<proc::coredump::CoredumpEntry> entry =
      proc::coredump::NewestCoredump(source, match, {});
  if (!entry.ok()) return Fail(entry.status().message());
  absl::StatusOr<proc::coredump::CoreSource> core =
      proc::coredump::ResolveCore(*entry, /*word_size=*/8);
  std::vector<CoreSummary::Fact> facts = CoredumpFacts(*entry);
  if (!core.ok()) {
    // The metadata is still worth seeing: coredumpctl info prints it too.
    for (const CoreSummary::Fact& f : facts) {
      std::fprintf(stderr, "%s: %s\n", f.label.c_str(), f.value.c_str());
    }
    return Fail(core.status().message());
  }
  const std::string name = entry->Get("COREDUMP_FILENAME").value_or(
      absl::StrCat("journal entry ", entry->cursor));
  return RunCoreFile(cmd, core->path, name, std::move(facts), cancel, &core->options);
}

}  // namespace unwindd::service
