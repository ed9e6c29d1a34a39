// A file descriptor owned by one object and closed exactly once, and the
// one way this codebase opens files: always O_CLOEXEC (unwindd forks demo
// and test children, which must not inherit our descriptors), EINTR retried.
//
//   ScopedFd fd = OpenCloexec("/proc/123/maps", O_RDONLY);
//   if (!fd.valid()) return ErrnoToStatus(errno, ...);
//
// Lives in memory/, the lowest layer, so that every layer can use it.
#ifndef UNWINDD_MEMORY_SCOPED_FD_H_
#define UNWINDD_MEMORY_SCOPED_FD_H_

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace unwindd::memory {

class ScopedFd {
 public:
  explicit ScopedFd(int fd = -1) : fd_(fd) {}
  ScopedFd(ScopedFd&& other) : fd_(other.release()) {}
  ScopedFd& operator=(ScopedFd&& other) {
    if (this != &other) {
      Close();
      fd_ = other.release();
    }
    return *this;
  }
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(const ScopedFd&) = delete;
  ~ScopedFd() { Close(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  // Gives up ownership without closing.
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  void Close() {
    // No retry on EINTR: Linux has already released the descriptor, and a
    // second close could hit one another thread just opened.
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  int fd_;
};

// open(path, flags | O_CLOEXEC), retried on EINTR. Invalid on failure, with
// errno from open().
inline ScopedFd OpenCloexec(const char* path, int flags) {
  int fd;
  do {
    fd = ::open(path, flags | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  return ScopedFd(fd);
}

// A file to read that something else named: a recording, a core's notes,
// a request, a debug link, a directory listing. O_NONBLOCK, because
// opening a FIFO for reading otherwise waits, with no timeout and through
// every signal the caller catches, until someone opens it for writing (a
// regular file ignores the flag); O_NOCTTY, because it may name a
// terminal. The caller still checks that it is a regular file.
inline ScopedFd OpenNamedFile(const char* path) {
  return OpenCloexec(path, O_RDONLY | O_NONBLOCK | O_NOCTTY);
}

}  // namespace unwindd::memory

#endif  // UNWINDD_MEMORY_SCOPED_FD_H_
