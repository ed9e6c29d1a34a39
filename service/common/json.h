// JSON string literals for what the CLI prints and the server logs.
//
//   absl::StrAppend(&out, "\"module\": ", JsonString(path));
//
// Strings come from targets (a core or a process can name a file with any
// bytes), so they need not be UTF-8. Valid UTF-8 sequences are copied as
// they are; every byte that is not part of one is written as "\u00XX", the
// same way every time, so the output is always valid JSON and nothing is
// dropped. Valid characters are never escaped, so in this output an escape
// \u0080..\u00ff always stands for one raw byte: a reader that needs the
// exact bytes replaces those escapes by the bytes before parsing.
#ifndef UNWINDD_SERVICE_COMMON_JSON_H_
#define UNWINDD_SERVICE_COMMON_JSON_H_

#include <string>

#include "absl/strings/string_view.h"

namespace unwindd::service {

// `s` as a JSON string literal, quotes included.
std::string JsonString(absl::string_view s);

}  // namespace unwindd::service

#endif  // UNWINDD_SERVICE_COMMON_JSON_H_
