// Which client runs `unwind --server=...`: the in-process socket client
// for `pid` through a Unix socket with nothing only unwind_remote refuses,
// unwind_remote for everything else.
#include "service/cli/remote_exec.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "service/cli/args.h"

namespace unwindd::service {
namespace {

bool ForSocket(const std::vector<absl::string_view>& raw) {
  absl::StatusOr<std::vector<std::string>> normalized = NormalizeArgs(raw);
  EXPECT_TRUE(normalized.ok()) << normalized.status();
  const std::vector<absl::string_view> args(normalized->begin(), normalized->end());
  EXPECT_TRUE(WantsServer(args));
  return ForSocketClient(args);
}

TEST(RemoteExecTest, PidThroughAUnixSocketGoesToTheSocketClient) {
  EXPECT_TRUE(ForSocket({"--server=unix:/run/unwindd.sock", "pid", "1"}));
  EXPECT_TRUE(ForSocket({"--server", "unix:/run/unwindd.sock", "pid", "1"}));
  EXPECT_TRUE(ForSocket({"pid", "1", "--server=unix:rel/sock", "--format=json", "--tid=2",
                         "--max-frames=4", "--symbols", "--sources=fp"}));
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
