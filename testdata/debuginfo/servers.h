// HTTP servers for the debuginfod tests, all on 127.0.0.1: a real
// `debuginfod -F DIR` (elfutils' server, Debian package `debuginfod`) over
// a directory of fixture binaries, and a stub that answers every request
// with fixed bytes (a server that sends the wrong file) or accepts and never
// answers (a server that hangs).
//
//   absl::StatusOr<std::unique_ptr<DebuginfodServer>> s =
//       DebuginfodServer::Start(dir, /*files=*/3);
//   setenv("DEBUGINFOD_URLS", (*s)->url().c_str(), 1);
//
// Every process started here is killed and reaped by its owner's
// destructor, and dies with the test (PR_SET_PDEATHSIG).
#ifndef UNWINDD_TESTDATA_DEBUGINFO_SERVERS_H_
#define UNWINDD_TESTDATA_DEBUGINFO_SERVERS_H_

#include <sys/types.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace unwindd::debuginfo_testing {

class DebuginfodServer {
 public:
  // Starts `debuginfod -F dir` on a free port with its database in a new
  // temporary directory, and waits until it has scanned `files` files
  // (its /metrics: scanned_files_total, no scan work pending).
  static absl::StatusOr<std::unique_ptr<DebuginfodServer>> Start(
      const std::string& dir, int files,
      absl::Duration timeout = absl::Seconds(60));
  ~DebuginfodServer();

  int port() const { return port_; }
  std::string url() const;
  pid_t pid() const { return pid_; }
  // The server's own log (stderr), for failure messages.
  std::string Log() const;

 private:
  DebuginfodServer() = default;
  pid_t pid_ = -1;
  int port_ = 0;
  std::string work_dir_;
};

// A one-thread HTTP/1.0 server. kServeBytes: reads a request, answers
// "200 OK" with `body`, closes. kHang: accepts and keeps every connection
// open without reading or answering until destroyed.
class StubHttpServer {
 public:
  enum class Mode { kServeBytes, kHang };
  static absl::StatusOr<std::unique_ptr<StubHttpServer>> Start(Mode mode,
                                                               std::string body);
  ~StubHttpServer();

  std::string url() const;
  int requests() const { return requests_.load(); }

 private:
  StubHttpServer() = default;
  void Run();

  Mode mode_ = Mode::kServeBytes;
  std::string body_;
  int listen_fd_ = -1;
  int wake_fd_[2] = {-1, -1};
  int port_ = 0;
  std::atomic<int> requests_{0};
  std::thread thread_;
};

// GET http://127.0.0.1:port/path; the body of a 200 answer.
absl::StatusOr<std::string> HttpGet(int port, const std::string& path,
                                    absl::Duration timeout);

// A port nothing listens on right now (bound once to 127.0.0.1:0).
absl::StatusOr<int> FreePort();

// The contents of a file; for copying fixtures into layouts.
absl::StatusOr<std::string> ReadFile(const std::string& path);
absl::Status WriteFile(const std::string& path, const std::string& bytes,
                       int mode = 0755);
// mkdir -p.
absl::Status MakeDirs(const std::string& path);
// A new empty directory under $TEST_TMPDIR (else /tmp).
std::string NewTempDir(const std::string& prefix);

}  // namespace unwindd::debuginfo_testing

#endif  // UNWINDD_TESTDATA_DEBUGINFO_SERVERS_H_
