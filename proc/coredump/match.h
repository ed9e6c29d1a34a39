// `unwind coredump MATCH`: which journal field MATCH is matched against,
// by coredumpctl's rule (src/coredump/coredumpctl.c add_match()):
//   FIELD=VALUE        as it is;
//   a path (has '/')   COREDUMP_EXE, made absolute against the cwd;
//   a number (a pid)   COREDUMP_PID;
//   anything else      COREDUMP_COMM.
//
//   absl::StatusOr<JournalMatch> m = ParseCoredumpMatch("./server", "/srv");
//   m->field;   // "COREDUMP_EXE";  m->value: "/srv/./server"
#ifndef UNWINDD_PROC_COREDUMP_MATCH_H_
#define UNWINDD_PROC_COREDUMP_MATCH_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace unwindd::proc::coredump {

struct JournalMatch {
  std::string field;
  std::string value;
  std::string ToString() const { return field + "=" + value; }
};

// InvalidArgument for an empty match or a FIELD=VALUE whose field is not
// a valid journal field name.
absl::StatusOr<JournalMatch> ParseCoredumpMatch(absl::string_view match,
                                                absl::string_view cwd);

}  // namespace unwindd::proc::coredump

#endif  // UNWINDD_PROC_COREDUMP_MATCH_H_
