#include "proc/procfs.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "memory/scoped_fd.h"

namespace unwindd::proc {
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
  // /proc files report size 0, so read until EOF, straight into the
  // string: no bounce buffer (a large one would be fresh stack pages on
  // every short command), its room doubled as it fills. One byte past the
  // limit tells a file that is too long.
  const size_t cap = max_bytes == SIZE_MAX ? max_bytes : max_bytes + 1;
  std::string out(std::min<size_t>(4096, cap), '\0');
  size_t used = 0;
  for (;;) {
    if (used == out.size()) {
      if (used == cap) break;
      out.resize(std::min(out.size() * 2, cap));
    }
    const ssize_t n = read(fd.get(), out.data() + used, out.size() - used);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ProcError(errno, pid, path);
    if (n == 0) break;
    used += static_cast<size_t>(n);
  }
  if (used > max_bytes) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "%s of process %d is longer than %d bytes", path, pid, max_bytes));
  }
  out.resize(used);
  return out;
}

absl::StatusOr<std::vector<pid_t>> ListTasks(pid_t pid) {
  const std::string path = ProcPath(pid, "task");
  memory::ScopedFd fd =
      memory::OpenCloexec(path.c_str(), O_RDONLY | O_DIRECTORY);
  if (!fd.valid()) return ProcError(errno, pid, path);
  // getdents64 itself rather than opendir: its 32 KiB buffer is fresh heap,
  // and it costs two more system calls, for a listing that usually fits in
  // one small read.
  std::vector<pid_t> tids;
  alignas(8) char buf[4096];
  for (;;) {
    const ssize_t n = getdents64(fd.get(), buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ProcError(errno, pid, path);
    if (n == 0) break;
    for (size_t at = 0; at < static_cast<size_t>(n);) {
      const size_t name_at = at + offsetof(struct dirent64, d_name);
      uint16_t reclen;
      if (name_at > static_cast<size_t>(n)) return ProcError(EIO, pid, path);
      std::memcpy(&reclen, buf + at + offsetof(struct dirent64, d_reclen), sizeof(reclen));
      if (at + reclen > static_cast<size_t>(n) || at + reclen <= name_at) {
        return ProcError(EIO, pid, path);
      }
      const absl::string_view name(buf + name_at, strnlen(buf + name_at, at + reclen - name_at));
      pid_t tid;
      if (absl::SimpleAtoi(name, &tid) && tid > 0) tids.push_back(tid);
      at += reclen;
    }
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
