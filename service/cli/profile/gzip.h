// gzip (RFC 1952) through zlib, for pprof files: profile.proto says "On-disk,
// the serialized proto must be gzip-compressed", and pprof reads both.
//
//   absl::StatusOr<std::string> gz = GzipCompress(EncodePprof(profile));
//   absl::StatusOr<std::string> raw = GzipDecompress(*gz, 1 << 30);
#ifndef UNWINDD_SERVICE_CLI_PROFILE_GZIP_H_
#define UNWINDD_SERVICE_CLI_PROFILE_GZIP_H_

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace unwindd::profile {

// Internal on a zlib failure (out of memory).
absl::StatusOr<std::string> GzipCompress(absl::string_view data);

// GzipCompress of data given in pieces, for a writer that encodes as it
// goes instead of holding the whole input (the bytes are the same):
//   GzipWriter gz;
//   for (each piece) gz.Write(piece);
//   absl::StatusOr<std::string> out = std::move(gz).Finish();
// Errors (Internal, from zlib) are kept and returned by Finish.
class GzipWriter {
 public:
  GzipWriter();
  ~GzipWriter();
  GzipWriter(const GzipWriter&) = delete;
  GzipWriter& operator=(const GzipWriter&) = delete;

  void Write(absl::string_view data);
  absl::StatusOr<std::string> Finish() &&;

 private:
  struct State;
  void Deflate(absl::string_view data, bool finish);

  std::unique_ptr<State> state_;
  absl::Status status_;
  std::string out_;
};

// One gzip member. DataLoss for malformed or truncated input,
// ResourceExhausted when the output would exceed `max_size` bytes.
absl::StatusOr<std::string> GzipDecompress(absl::string_view data,
                                           size_t max_size);

}  // namespace unwindd::profile

#endif  // UNWINDD_SERVICE_CLI_PROFILE_GZIP_H_
