// gzip (RFC 1952) through zlib, for pprof files: profile.proto says "On-disk,
// the serialized proto must be gzip-compressed", and pprof reads both.
//
//   absl::StatusOr<std::string> gz = GzipCompress(EncodePprof(profile));
//   absl::StatusOr<std::string> raw = GzipDecompress(*gz, 1 << 30);
#ifndef UNWINDD_SERVICE_CLI_PROFILE_GZIP_H_
#define UNWINDD_SERVICE_CLI_PROFILE_GZIP_H_

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace unwindd::profile {

// Internal on a zlib failure (out of memory).
absl::StatusOr<std::string> GzipCompress(absl::string_view data);

// One gzip member. DataLoss for malformed or truncated input,
// ResourceExhausted when the output would exceed `max_size` bytes.
absl::StatusOr<std::string> GzipDecompress(absl::string_view data,
                                           size_t max_size);

}  // namespace unwindd::profile

#endif  // UNWINDD_SERVICE_CLI_PROFILE_GZIP_H_
