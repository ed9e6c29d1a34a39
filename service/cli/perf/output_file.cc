#include "service/cli/perf/output_file.h"

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

namespace unwindd::service::perf {

absl::StatusOr<OutputFile> OutputFile::Open(const std::string& path) {
  if (path.empty() || path == "-") return OutputFile(stdout, "");
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "we");
  if (f == nullptr) {
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot create ", tmp));
  }
  return OutputFile(f, path);
}

OutputFile::OutputFile(OutputFile&& o) noexcept
    : file_(std::exchange(o.file_, nullptr)), path_(std::move(o.path_)) {}

OutputFile::~OutputFile() {
  if (file_ != nullptr && !path_.empty()) {
    std::fclose(file_);
    std::remove((path_ + ".tmp").c_str());
  }
}

absl::Status OutputFile::Close() {
  if (file_ == nullptr) return absl::OkStatus();
  std::FILE* f = std::exchange(file_, nullptr);
  if (path_.empty()) {
    return std::fflush(f) == 0 ? absl::OkStatus()
                               : absl::DataLossError("cannot write to stdout");
  }
  const bool ok = std::fflush(f) == 0 && !std::ferror(f);
  const bool closed = std::fclose(f) == 0;
  const std::string tmp = path_ + ".tmp";
  if (!ok || !closed) {
    std::remove(tmp.c_str());
    return absl::DataLossError(absl::StrCat("cannot write ", path_));
  }
  if (std::rename(tmp.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    return absl::ErrnoToStatus(err, absl::StrCat("cannot rename ", tmp, " to ", path_));
  }
  return absl::OkStatus();
}

}  // namespace unwindd::service::perf
