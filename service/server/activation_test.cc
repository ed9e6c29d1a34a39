#include "service/server/activation.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "memory/scoped_fd.h"

namespace unwindd::service {
namespace {

TEST(ParseListenEnvTest, NothingUnlessListenPidIsOurs) {
  absl::StatusOr<ListenEnv> e = ParseListenEnv(nullptr, "2", nullptr, 100);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->count, 0);
  e = ParseListenEnv("99", "2", "a:b", 100);  // a parent's
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->count, 0);
}

TEST(ParseListenEnvTest, CountAndNames) {
  absl::StatusOr<ListenEnv> e = ParseListenEnv("100", "2", "unwindd.socket:tcp", 100);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->count, 2);
  ASSERT_EQ(e->names.size(), 2u);
  EXPECT_EQ(e->names[0], "unwindd.socket");
  EXPECT_EQ(e->names[1], "tcp");
  e = ParseListenEnv("100", "1", nullptr, 100);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->count, 1);
  EXPECT_TRUE(e->names.empty());
}

TEST(ParseListenEnvTest, RefusesWhatIsMalformed) {
  for (const auto& [pid, fds, names] :
       std::vector<std::tuple<const char*, const char*, const char*>>{
           {"x", "1", nullptr},
           {"-5", "1", nullptr},
           {"100", nullptr, nullptr},
           {"100", "-1", nullptr},
           {"100", "1x", nullptr},
           {"100", "65", nullptr},
           {"100", "99999999999999999999", nullptr},
           {"100", "2", "one"},
           {"100", "1", "a:b"}}) {
    absl::StatusOr<ListenEnv> e = ParseListenEnv(pid, fds, names, 100);
    EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument)
        << pid << " " << (fds ? fds : "null") << " " << (names ? names : "null");
  }
}

memory::ScopedFd Socket(int family, int type) {
  return memory::ScopedFd(socket(family, type | SOCK_CLOEXEC, 0));
}

TEST(CheckListeningSocketTest, AcceptsListeningUnixAndTcp) {
  memory::ScopedFd u = Socket(AF_UNIX, SOCK_STREAM);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  // Bazel's TEST_TMPDIR is longer than sun_path: a directory of our own.
  char dir[] = "/tmp/activation_test.XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  std::string path = absl::StrCat(dir, "/act.sock");
  ASSERT_LT(path.size(), sizeof(addr.sun_path));
  std::memcpy(addr.sun_path, path.data(), path.size());
  ASSERT_EQ(bind(u.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(u.get(), 1), 0);
  InheritedSocket s;
  absl::Status ok = CheckListeningSocket(u.get(), &s);
  ASSERT_TRUE(ok.ok()) << ok;
  EXPECT_EQ(s.family, AF_UNIX);
  EXPECT_EQ(s.address, "unix:" + path);
  unlink(path.c_str());
  rmdir(dir);

  memory::ScopedFd t = Socket(AF_INET, SOCK_STREAM);
  sockaddr_in in{};
  in.sin_family = AF_INET;
  in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(t.get(), reinterpret_cast<sockaddr*>(&in), sizeof(in)), 0);
  ASSERT_EQ(listen(t.get(), 1), 0);
  ok = CheckListeningSocket(t.get(), &s);
  ASSERT_TRUE(ok.ok()) << ok;
  EXPECT_EQ(s.family, AF_INET);
  EXPECT_TRUE(absl::StartsWith(s.address, "tcp:127.0.0.1:")) << s.address;
  EXPECT_NE(s.address, "tcp:127.0.0.1:0");
}

TEST(CheckListeningSocketTest, RefusesAnythingElseSayingWhat) {
  InheritedSocket s;
  auto expect = [&](int fd, const std::string& what) {
    absl::Status st = CheckListeningSocket(fd, &s);
    EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition) << st;
    EXPECT_TRUE(absl::StrContains(st.message(), what)) << st;
  };
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  memory::ScopedFd r(pipe_fds[0]), w(pipe_fds[1]);
  expect(r.get(), "not a socket");
  memory::ScopedFd unlistened = Socket(AF_UNIX, SOCK_STREAM);
  expect(unlistened.get(), "not listening");
  memory::ScopedFd udp = Socket(AF_INET, SOCK_DGRAM);
  expect(udp.get(), "not SOCK_STREAM");
  int closed = dup(r.get());
  close(closed);
  expect(closed, "not open");
}

}  // namespace
}  // namespace unwindd::service
