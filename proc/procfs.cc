#include "proc/procfs.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "memory/scoped_fd.h"

namespace unwindd::proc {
namespace {

struct DirCloser {
  void operator()(DIR* d) const { closedir(d); }
};

}  // namespace

std::string ProcPath(pid_t pid, absl::string_view rest) {
  return absl::StrCat("/proc/", pid, "/", rest);
}

std::string TaskPath(pid_t pid, pid_t tid, absl::string_view rest) {
  return absl::StrCat("/proc/", pid, "/task/", tid, "/", rest);
}

absl::Status ProcError(int err, pid_t pid, absl::string_view path) {
  switch (err) {
    case ENOENT:
    case ESRCH:
      return absl::NotFoundError(absl::StrFormat("no such process %d", pid));
    case EACCES:
    case EPERM:
      return absl::PermissionDeniedError(absl::StrFormat(
          "cannot read %s of process %d: %s", path, pid, strerror(err)));
    default:
      return absl::ErrnoToStatus(
          err, absl::StrFormat("reading %s of process %d", path, pid));
  }
}

absl::StatusOr<std::string> ReadProcFile(pid_t pid, const std::string& path,
                                         size_t max_bytes) {
  memory::ScopedFd fd = memory::OpenCloexec(path.c_str(), O_RDONLY);
  if (!fd.valid()) return ProcError(errno, pid, path);
  // /proc files report size 0, so read until EOF in chunks.
  std::string out;
  char chunk[64 * 1024];
  for (;;) {
    ssize_t n = read(fd.get(), chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ProcError(errno, pid, path);
    if (n == 0) return out;
    if (out.size() + static_cast<size_t>(n) > max_bytes) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "%s of process %d is longer than %d bytes", path, pid, max_bytes));
    }
    out.append(chunk, static_cast<size_t>(n));
  }
}

absl::StatusOr<std::vector<pid_t>> ListTasks(pid_t pid) {
  const std::string path = ProcPath(pid, "task");
  memory::ScopedFd fd =
      memory::OpenCloexec(path.c_str(), O_RDONLY | O_DIRECTORY);
  if (!fd.valid()) return ProcError(errno, pid, path);
  std::unique_ptr<DIR, DirCloser> dir(fdopendir(fd.get()));
  if (dir == nullptr) return ProcError(errno, pid, path);
  fd.release();  // closedir closes it now
  std::vector<pid_t> tids;
  for (;;) {
    errno = 0;
    const dirent* e = readdir(dir.get());
    if (e == nullptr) {
      if (errno != 0) return ProcError(errno, pid, path);
      break;
    }
    pid_t tid;
    if (absl::SimpleAtoi(e->d_name, &tid) && tid > 0) tids.push_back(tid);
  }
  std::sort(tids.begin(), tids.end());
  // An empty list means the process died between open and read.
  if (tids.empty()) return ProcError(ESRCH, pid, path);
  return tids;
}

absl::StatusOr<ProcStat> ReadStat(pid_t pid, pid_t tid) {
  const std::string path = TaskPath(pid, tid, "stat");
  absl::StatusOr<std::string> text = ReadProcFile(pid, path);
  if (!text.ok()) return text.status();
  return ParseStat(*text, path);
}

absl::StatusOr<ProcStat> ParseStat(absl::string_view text,
                                   absl::string_view path) {
  // "tid (comm) S ppid pgrp session tty tpgid flags ...": comm may hold
  // spaces and parentheses, so the fields start after the *last* ')'.
  size_t paren = text.rfind(')');
  if (paren == absl::string_view::npos) {
    return absl::DataLossError(absl::StrFormat("%s: no ')'", path));
  }
  std::vector<absl::string_view> f = absl::StrSplit(
      text.substr(paren + 1), ' ', absl::SkipEmpty());
  ProcStat st;
  if (f.size() < 7 || f[0].size() != 1 || !absl::SimpleAtoi(f[6], &st.flags)) {
    return absl::DataLossError(absl::StrFormat("%s: malformed", path));
  }
  st.state = f[0][0];
  return st;
}

absl::StatusOr<int64_t> ReadStatusField(pid_t pid, pid_t tid,
                                        absl::string_view key) {
  const std::string path = TaskPath(pid, tid, "status");
  absl::StatusOr<std::string> text = ReadProcFile(pid, path);
  if (!text.ok()) return text.status();
  return ParseStatusField(*text, key, path);
}

absl::StatusOr<int64_t> ParseStatusField(absl::string_view text,
                                         absl::string_view key,
                                         absl::string_view path) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::ConsumePrefix(&line, key) || !absl::ConsumePrefix(&line, ":")) {
      continue;
    }
    int64_t v;
    if (absl::SimpleAtoi(absl::StripAsciiWhitespace(line), &v)) return v;
    return absl::DataLossError(absl::StrFormat("%s: bad %s field", path, key));
  }
  return absl::NotFoundError(absl::StrFormat("%s: no %s field", path, key));
}

bool ThreadExited(pid_t pid, pid_t tid) {
  absl::StatusOr<ProcStat> st = ReadStat(pid, tid);
  if (!st.ok()) return absl::IsNotFound(st.status());
  return st->state == 'Z' || st->state == 'X';
}

}  // namespace unwindd::proc
