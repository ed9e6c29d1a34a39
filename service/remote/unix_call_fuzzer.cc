// What a server sends back to the socket client (unix_call.h), any bytes:
// the input is written to the server's end of a socket pair, which is then
// shut for writing, and the call is made on the other end; an answer is
// parsed as an UnwindResponse and converted as the socket client does.
// The seeds are real unwindd answers (a process's stacks, an error).
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>

#include "absl/time/clock.h"
#include "service/common/convert.h"
#include "service/remote/unix_call.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) return 0;
  // The socket buffer holds a whole input (max_len is 64 KiB).
  for (size_t at = 0; at < size;) {
    const ssize_t w = write(fds[1], data + at, size - at);
    if (w <= 0) break;
    at += w;
  }
  shutdown(fds[1], SHUT_WR);
  unwindd::service::UnixCallOptions options;
  options.max_answer_bytes = 16 << 10;
  absl::StatusOr<std::string> answer = unwindd::service::UnaryCallOnSocket(
      fds[0], "/unwindd.v1.Unwinder/UnwindProcess", "request", options,
      absl::Now() + absl::Milliseconds(500));  // under -timeout=1
  close(fds[0]);
  close(fds[1]);
  if (answer.ok()) {
    unwindd::v1::UnwindResponse response;
    if (response.ParseFromString(*answer)) (void)unwindd::service::FromProto(response);
  }
  return 0;
}
