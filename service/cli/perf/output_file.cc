#include "service/cli/perf/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

namespace unwindd::service::perf {
namespace {

constexpr size_t kBufferBytes = 1 << 18;

// Output goes out in large writes (stdio's default buffer is st_blksize,
// 4 KiB: a system call every sample or two). glibc ignores setvbuf's size
// unless it is given the buffer, which must outlive the FILE. A terminal
// keeps its line buffering. Called before anything is written to `f`.
void BufferLargely(std::FILE* f, char* buffer) {
  if (isatty(fileno(f))) return;
  std::setvbuf(f, buffer, _IOFBF, kBufferBytes);
}

}  // namespace

absl::Status RefuseTerminal(const std::string& path, bool binary, bool force) {
  if (!binary || force) return absl::OkStatus();
  bool tty = false;
  if (path.empty() || path == "-") {
    tty = isatty(STDOUT_FILENO) != 0;
  } else if (struct stat st; stat(path.c_str(), &st) == 0 && S_ISCHR(st.st_mode)) {
    const int fd = open(path.c_str(), O_WRONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
    tty = fd >= 0 && isatty(fd) != 0;
    if (fd >= 0) close(fd);
  }
  if (!tty) return absl::OkStatus();
  return absl::FailedPreconditionError(
      "not writing pprof's gzipped output to a terminal: give -o FILE, pipe it, "
      "choose another --format, or add --force");
}

absl::StatusOr<OutputFile> OutputFile::Open(const std::string& path) {
  if (path.empty() || path == "-") {
    static char* stdout_buffer = new char[kBufferBytes];  // lives as stdout does
    static const bool buffered = (BufferLargely(stdout, stdout_buffer), true);
    (void)buffered;
    return OutputFile(stdout, "");
  }
  struct stat st;
  if (stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    // A device, FIFO or terminal: never replaced by a rename.
    std::FILE* f = std::fopen(path.c_str(), "we");
    if (f == nullptr) return absl::ErrnoToStatus(errno, absl::StrCat("cannot open ", path));
    OutputFile out(f, "");
    out.own_ = true;
    out.buffer_ = std::make_unique_for_overwrite<char[]>(kBufferBytes);
    BufferLargely(f, out.buffer_.get());
    return out;
  }
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "we");
  if (f == nullptr) {
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot create ", tmp));
  }
  OutputFile out(f, path);
  out.own_ = true;
  out.buffer_ = std::make_unique_for_overwrite<char[]>(kBufferBytes);
  BufferLargely(f, out.buffer_.get());
  return out;
}

OutputFile::OutputFile(OutputFile&& o) noexcept
    : file_(std::exchange(o.file_, nullptr)),
      path_(std::move(o.path_)),
      own_(o.own_),
      buffer_(std::move(o.buffer_)) {}

OutputFile::~OutputFile() {
  if (file_ == nullptr || !own_) return;
  std::fclose(file_);
  if (!path_.empty()) std::remove((path_ + ".tmp").c_str());
}

absl::Status OutputFile::Close() {
  if (file_ == nullptr) return absl::OkStatus();
  std::FILE* f = std::exchange(file_, nullptr);
  if (path_.empty()) {
    const bool ok = std::fflush(f) == 0 && !std::ferror(f);
    const bool closed = !own_ || std::fclose(f) == 0;
    return ok && closed ? absl::OkStatus() : absl::DataLossError("cannot write the output");
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
