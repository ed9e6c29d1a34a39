// UTF-8 checks for strings that come from targets: a core or a process can
// name a file with any bytes, while JSON text and proto3 `string` fields
// must be valid UTF-8 (a peer's parser rejects the whole message
// otherwise). JSON escapes each stray byte (json.h); a proto answer carries
// the lossy form below in the `string` field and, for paths, the raw bytes
// beside it (Module.path_bytes, Module.file_bytes).
//
//   pm->set_path(Utf8Lossy(m.path));
//   if (!IsUtf8(m.path)) pm->set_path_bytes(m.path);
#ifndef UNWINDD_SERVICE_COMMON_UTF8_H_
#define UNWINDD_SERVICE_COMMON_UTF8_H_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace unwindd::service {

// The length of the valid UTF-8 sequence at the start of `s` (1 to 4
// bytes: no overlong forms, no surrogates, nothing above U+10FFFF; RFC
// 3629 section 4), or 0.
size_t Utf8SequenceLength(absl::string_view s);

bool IsUtf8(absl::string_view s);

// `s` with every byte that is not part of a valid sequence replaced by
// U+FFFD (what Python's "replace" and Go's strings.ToValidUTF8 do); `s`
// itself when it is valid.
std::string Utf8Lossy(absl::string_view s);
// Utf8Lossy(s).size(), and Utf8Lossy written at `p` (returns its end).
size_t Utf8LossySize(absl::string_view s);
char* WriteUtf8Lossy(char* p, absl::string_view s);

}  // namespace unwindd::service

#endif  // UNWINDD_SERVICE_COMMON_UTF8_H_
