// The real unwindd, started as a child process on a temporary Unix socket,
// for tests and the load benchmark: the same binary, flags and socket
// handling as in production, and its /proc entries to count fds and threads.
//
//   absl::StatusOr<std::unique_ptr<ServerProcess>> s = ServerProcess::Start(dir, {});
//   std::unique_ptr<v1::Unwinder::Stub> stub = (*s)->Stub();
//   ...
//   EXPECT_EQ((*s)->Terminate(), 0);   // SIGTERM, then its exit status
#ifndef UNWINDD_SERVICE_SERVER_TESTING_SERVER_FIXTURE_H_
#define UNWINDD_SERVICE_SERVER_TESTING_SERVER_FIXTURE_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "proto/unwinder.grpc.pb.h"

namespace unwindd::service::testing {

// The unwindd binary in the runfiles.
std::string UnwinddBinary();
// A binary of //service in the runfiles ("unwind", "unwindd").
std::string ServiceBinary(const std::string& name);
// A test binary or fixture of //service/server ("test_client").
std::string ServerTestBinary(const std::string& name);

// The whole file ("" if it cannot be read).
std::string ReadFile(const std::string& path);
// Copies `from` to `to` (created or truncated) and gives it `mode`.
bool CopyFile(const std::string& from, const std::string& to, mode_t mode);

class ServerProcess {
 public:
  // Starts unwindd listening on DIR/unwindd.sock with its request log in
  // DIR/requests.log and its stderr in DIR/stderr.log, plus `extra_args`;
  // returns once the health service answers SERVING.
  static absl::StatusOr<std::unique_ptr<ServerProcess>> Start(
      const std::string& dir, const std::vector<std::string>& extra_args,
      absl::Duration timeout = absl::Seconds(20));
  ~ServerProcess();  // SIGKILL if still running

  pid_t pid() const { return pid_; }
  const std::string& socket_path() const { return socket_; }
  std::string address() const { return "unix:" + socket_; }
  const std::string& dir() const { return dir_; }

  std::shared_ptr<grpc::Channel> NewChannel() const;
  std::unique_ptr<v1::Unwinder::Stub> Stub() const;
  // A TCP port unwindd printed it listens on (--listen=tcp:...:0), or 0.
  int TcpPort() const;
  std::string Stderr() const;
  std::string RequestLog() const;

  // Health check of `service` ("" = the server): true if SERVING.
  bool Serving(const std::string& service = "") const;
  // Open fds and threads of the server, from /proc.
  int CountFds() const;
  int CountThreads() const;

  // SIGTERM; waits up to `timeout` and returns the exit status (or -1 if it
  // had to be killed, 128+N if a signal N ended it).
  int Terminate(absl::Duration timeout = absl::Seconds(20));

 private:
  ServerProcess(pid_t pid, std::string dir)
      : pid_(pid), dir_(std::move(dir)), socket_(dir_ + "/unwindd.sock") {}
  pid_t pid_;
  std::string dir_;
  std::string socket_;
};

// TracerPid of every thread of `pid` (0 = untraced); empty if it is gone.
std::vector<int> TracerPids(pid_t pid);

// A fresh directory under /tmp that every user may enter (so tests can
// reach the socket as uid 65534); removed with its contents on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace unwindd::service::testing

#endif  // UNWINDD_SERVICE_SERVER_TESTING_SERVER_FIXTURE_H_
