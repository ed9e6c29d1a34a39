// JSON string literals for what the CLI prints and the server logs.
//
//   absl::StrAppend(&out, "\"module\": ", JsonString(path));
#ifndef UNWINDD_SERVICE_COMMON_JSON_H_
#define UNWINDD_SERVICE_COMMON_JSON_H_

#include <string>

#include "absl/strings/string_view.h"

namespace unwindd::service {

// `s` as a JSON string literal, quotes included.
std::string JsonString(absl::string_view s);

}  // namespace unwindd::service

#endif  // UNWINDD_SERVICE_COMMON_JSON_H_
