// The Unix listener's connections: what unwindd sets on each before gRPC
// gets it. The send buffer decides whether a batch of deep stacks' answers
// (~900 KiB) fits in the socket while the client reads, or the stream's
// thread waits for the client in the middle of every batch.
#include "service/server/listener.h"

#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "memory/scoped_fd.h"
#include "service/server/auth.h"

namespace unwindd::service {
namespace {

// What the kernel gives a socket whose SO_SNDBUF was set to `bytes`:
// twice it, capped at twice net.core.wmem_max (socket(7)).
int EffectiveSendBuffer(int bytes) {
  long wmem_max = 0;
  std::ifstream("/proc/sys/net/core/wmem_max") >> wmem_max;
  if (wmem_max <= 0) return 0;
  return 2 * static_cast<int>(std::min<long>(bytes, wmem_max));
}

int SendBuffer(int fd) {
  int v = 0;
  socklen_t n = sizeof(v);
  if (getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, &n) != 0) return -1;
  return v;
}

TEST(UnixSendBufferTest, SetOnAConnectedSocket) {
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  memory::ScopedFd a(fds[0]), b(fds[1]);
  const int before = SendBuffer(a.get());
  SetUnixSendBuffer(a.get());
  const int want = EffectiveSendBuffer(kUnixSendBufferBytes);
  ASSERT_GT(want, 0);
  EXPECT_EQ(SendBuffer(a.get()), want);
  EXPECT_GT(SendBuffer(a.get()), before);  // more than the default
  EXPECT_EQ(SendBuffer(b.get()), before);  // the other end is the client's
}

// Every connection the listener accepts has it before gRPC serves it.
TEST(UnixListenerTest, AcceptedConnectionsGetTheSendBuffer) {
  // Short: a Unix socket's path has 108 bytes (the test's TempDir may not).
  char dir[] = "/tmp/listener_test.XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/s.sock";
  PeerRegistry peers;
  absl::StatusOr<std::unique_ptr<UnixListener>> l =
      UnixListener::Bind({path, 0600, std::nullopt, 16}, &peers);
  ASSERT_TRUE(l.ok()) << l.status();
  grpc::ServerBuilder builder;
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  (*l)->Start(server.get(), nullptr);

  memory::ScopedFd client(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ASSERT_TRUE(client.valid());
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path.c_str());
  ASSERT_EQ(connect(client.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);

  // The accepted end is one of this process's fds: a connected Unix socket
  // named by the listener's path.
  int found = -1;
  for (int attempt = 0; attempt < 200 && found < 0; ++attempt) {
    for (int fd = 3; fd < 1024; ++fd) {
      if (fd == client.get()) continue;
      sockaddr_un name{};
      socklen_t n = sizeof(name);
      int listening = 1;
      socklen_t m = sizeof(listening);
      if (getsockname(fd, reinterpret_cast<sockaddr*>(&name), &n) != 0 ||
          name.sun_family != AF_UNIX || path != name.sun_path ||
          getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &m) != 0 || listening) {
        continue;
      }
      found = fd;
      break;
    }
    if (found < 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_GE(found, 0) << "the listener accepted no connection";
  // The fd exists from accept4 on, and the listener sets the buffer a
  // moment later (after reading the peer's credentials): wait for it, up
  // to 2 s, rather than catch that moment (an ASan build on a slow VM did).
  const int want = EffectiveSendBuffer(kUnixSendBufferBytes);
  for (int attempt = 0; attempt < 200 && SendBuffer(found) != want; ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(SendBuffer(found), want);

  client = memory::ScopedFd();
  (*l)->Stop();
  server->Shutdown(std::chrono::system_clock::now());  // no call to wait for
  rmdir(dir);
}

}  // namespace
}  // namespace unwindd::service
