// What `unwind --help`, `unwind help COMMAND` and `unwind COMMAND --help`
// print: one overview of the commands and the global flags, and one usage
// text per command with every flag it takes. The bash completion script
// (completion/unwind.bash) offers the same flags; a test keeps them equal.
//
//   if (const CommandUsage* u = FindCommandUsage("perf")) fputs(u->text, stdout);
#ifndef UNWINDD_SERVICE_CLI_USAGE_H_
#define UNWINDD_SERVICE_CLI_USAGE_H_

#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace unwindd::service {

struct CommandUsage {
  absl::string_view name;  // "pid", "core", ...
  absl::string_view text;  // the whole usage, ending in '\n'
};

// Every command, in the order the overview lists them.
absl::Span<const CommandUsage> CommandUsages();

// nullptr for an unknown command.
const CommandUsage* FindCommandUsage(absl::string_view name);

// `unwind --help`: the commands, the global flags (--server, --tls-*,
// --version) and where each command's own help is.
extern const char kUsage[];

// "(see 'unwind COMMAND --help')" for the command `args` name, or
// "(see 'unwind --help')": appended to a usage error's one line.
std::string SeeHelp(absl::Span<const absl::string_view> args);

}  // namespace unwindd::service

#endif  // UNWINDD_SERVICE_CLI_USAGE_H_
