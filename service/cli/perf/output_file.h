// Where `unwind perf` and `unwind profile` write: stdout, or -o FILE. A
// regular file (or a new one) is written to FILE.tmp and renamed into place
// only when everything was written, so an interrupted run never leaves half
// a profile behind; anything else that exists (/dev/null, a FIFO, a
// terminal) is written in place.
//
//   absl::StatusOr<OutputFile> out = OutputFile::Open(path);  // "" stdout
//   fputs(..., out->file());
//   absl::Status s = out->Close();
#ifndef UNWINDD_SERVICE_CLI_PERF_OUTPUT_FILE_H_
#define UNWINDD_SERVICE_CLI_PERF_OUTPUT_FILE_H_

#include <cstdio>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace unwindd::service::perf {

// FailedPrecondition when `path` ("" or "-": stdout) is a terminal and the
// output is binary (pprof's gzipped protobuf), unless `force`: as gzip
// refuses to write compressed data to a terminal. Checked before the work
// starts, so that nothing is sampled for nothing.
absl::Status RefuseTerminal(const std::string& path, bool binary, bool force);

class OutputFile {
 public:
  static absl::StatusOr<OutputFile> Open(const std::string& path);
  OutputFile(OutputFile&& o) noexcept;
  OutputFile& operator=(OutputFile&&) = delete;
  ~OutputFile();  // an unclosed file is removed

  std::FILE* file() const { return file_; }
  // Flushes, closes and renames into place; a write error is DataLoss.
  absl::Status Close();

 private:
  OutputFile(std::FILE* f, std::string path) : file_(f), path_(std::move(path)) {}
  std::FILE* file_ = nullptr;
  std::string path_;  // what to rename FILE.tmp to; "" for stdout or in place
  bool own_ = false;  // file_ is ours to close
  std::unique_ptr<char[]> buffer_;  // file_'s stdio buffer, freed after it closes
};

}  // namespace unwindd::service::perf

#endif  // UNWINDD_SERVICE_CLI_PERF_OUTPUT_FILE_H_
