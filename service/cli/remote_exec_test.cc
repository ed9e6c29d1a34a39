// Which client runs `unwind --server=...`: the in-process socket client
// for `pid` through a Unix socket with nothing only unwind_remote refuses,
// unwind_remote for everything else.
#include "service/cli/remote_exec.h"

#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "service/cli/args.h"

namespace unwindd::service {
namespace {

std::optional<SocketClientCall> Call(const std::vector<absl::string_view>& raw) {
  absl::StatusOr<std::vector<std::string>> normalized = NormalizeArgs(raw);
  EXPECT_TRUE(normalized.ok()) << normalized.status();
  const std::vector<absl::string_view> args(normalized->begin(), normalized->end());
  EXPECT_TRUE(WantsServer(args));
  return ForSocketClient(args);
}

bool ForSocket(const std::vector<absl::string_view>& raw) { return Call(raw).has_value(); }

TEST(RemoteExecTest, PidThroughAUnixSocketGoesToTheSocketClient) {
  EXPECT_TRUE(ForSocket({"--server=unix:/run/unwindd.sock", "pid", "1"}));
  EXPECT_TRUE(ForSocket({"--server", "unix:/run/unwindd.sock", "pid", "1"}));
  EXPECT_TRUE(ForSocket({"pid", "1", "--server=unix:rel/sock", "--format=json", "--tid=2",
                         "--max-frames=4", "--symbols", "--sources=fp"}));
  // The call: the socket's path and the command without --server.
  std::optional<SocketClientCall> call =
      Call({"--server=unix:/run/unwindd.sock", "pid", "42", "--tid=43", "--format=json"});
  ASSERT_TRUE(call.has_value());
  EXPECT_EQ(call->socket_path, "/run/unwindd.sock");
  EXPECT_EQ(call->cmd.kind, Command::Kind::kPid);
  EXPECT_EQ(call->cmd.pid, 42);
  EXPECT_EQ(call->cmd.tids, std::vector<pid_t>{43});
  EXPECT_EQ(call->cmd.format, Format::kJson);
  // The last --server counts, as for unwind_remote.
  call = Call({"--server=tcp:host:1", "--server=unix:/b.sock", "pid", "1"});
  ASSERT_TRUE(call.has_value());
  EXPECT_EQ(call->socket_path, "/b.sock");
  EXPECT_FALSE(ForSocket({"--server=unix:/a.sock", "--server=tcp:host:1", "pid", "1"}));
}

TEST(RemoteExecTest, EverythingElseGoesToTheGrpcClient) {
  EXPECT_FALSE(ForSocket({"--server=tcp:host:7070", "pid", "1"}));
  EXPECT_FALSE(ForSocket({"--server=dns:///unwindd:7070", "pid", "1"}));
  EXPECT_FALSE(ForSocket({"--server=unix:///run/unwindd.sock", "pid", "1"}));  // gRPC's URI form
  EXPECT_FALSE(ForSocket({"--server=unix:", "pid", "1"}));
  EXPECT_FALSE(ForSocket({"--server=unix:/s", "pid", "1", "--tls-ca=ca.pem"}));
  EXPECT_FALSE(ForSocket({"--server=unix:/s", "demo"}));
  EXPECT_FALSE(ForSocket({"--server=unix:/s", "core", "core.1"}));
  EXPECT_FALSE(ForSocket({"--server=unix:/s", "health"}));
  EXPECT_FALSE(ForSocket({"--server=unix:/s", "stats"}));
  EXPECT_FALSE(ForSocket({"--server=unix:/s", "pid", "1", "--format=core-backtrace"}));
  EXPECT_FALSE(ForSocket({"--server=unix:/s", "pid", "1", "--minidump=out.dmp"}));
  // A command line that does not parse: unwind_remote says what is wrong.
  EXPECT_FALSE(ForSocket({"--server=unix:/s", "pid", "1", "--bogus"}));
  EXPECT_FALSE(ForSocket({"--server=unix:/s", "pid"}));
}

}  // namespace
}  // namespace unwindd::service
