#include "service/server/flags.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace unwindd::service {
namespace {

absl::StatusOr<ServerFlags> Parse(std::vector<absl::string_view> args) {
  return ParseServerFlags(args);
}

TEST(ServerFlagsTest, DefaultsToTheUnixSocketOnly) {
  absl::StatusOr<ServerFlags> f = Parse({});
  ASSERT_TRUE(f.ok());
  ASSERT_EQ(f->listen.size(), 1u);
  EXPECT_EQ(f->listen[0].kind, ListenAddress::Kind::kUnix);
  EXPECT_EQ(f->listen[0].address, "/run/unwindd.sock");
  EXPECT_TRUE(f->listen_is_default);
  EXPECT_FALSE(f->keep_capabilities);
  EXPECT_EQ(f->socket_mode, 0660u);
  EXPECT_FALSE(f->service.allow_tcp_unwind_any);
  EXPECT_GE(f->service.workers, 2);
}

TEST(ServerFlagsTest, ParsesEveryFlag) {
  absl::StatusOr<ServerFlags> f = Parse(
      {"--listen=unix:/tmp/a.sock", "--listen=tcp:127.0.0.1:0", "--allow-tcp-unwind-any",
       "--socket-mode=0600", "--socket-group=adm", "--workers=3", "--max-queued=7",
       "--request-timeout=5", "--max-frames=100", "--max-core-bytes=4096",
       "--max-stack-bytes=8192", "--max-samples-per-stream=9", "--max-connections=11",
       "--module-cache-bytes=1048576", "--request-log=none", "--drain-timeout=2",
       "--max-mapping-tables=5", "--max-mapping-table-bytes=65536",
       "--keep-capabilities", "--max-connection-age=7", "--max-connection-age-grace=3",
       "--health-listen=tcp:0.0.0.0:7071"});
  ASSERT_TRUE(f.ok()) << f.status();
  ASSERT_EQ(f->listen.size(), 2u);
  EXPECT_FALSE(f->listen_is_default);
  EXPECT_TRUE(f->keep_capabilities);
  EXPECT_EQ(f->listen[1].kind, ListenAddress::Kind::kTcp);
  EXPECT_EQ(f->listen[1].address, "127.0.0.1:0");
  EXPECT_TRUE(f->service.allow_tcp_unwind_any);
  EXPECT_EQ(f->socket_mode, 0600u);
  EXPECT_EQ(f->socket_group, "adm");
  EXPECT_EQ(f->service.workers, 3);
  EXPECT_EQ(f->service.max_queued, 7);
  EXPECT_EQ(f->service.max_request_time, absl::Seconds(5));
  EXPECT_EQ(f->service.max_frames, 100);
  EXPECT_EQ(f->service.default_frames, 100);  // the default is capped too
  EXPECT_EQ(f->service.max_core_bytes, 4096u);
  EXPECT_EQ(f->service.snapshot.max_stack_bytes, 8192u);
  EXPECT_EQ(f->service.max_samples_per_stream, 9u);
  EXPECT_EQ(f->service.snapshot.max_tables, 5);
  EXPECT_EQ(f->service.snapshot.max_table_bytes, 65536u);
  EXPECT_EQ(f->max_connections, 11u);
  EXPECT_EQ(f->request_log, "none");
  EXPECT_EQ(f->drain_timeout, absl::Seconds(2));
  EXPECT_EQ(f->max_connection_age, absl::Seconds(7));
  EXPECT_EQ(f->max_connection_age_grace, absl::Seconds(3));
  EXPECT_EQ(f->service.max_stream_age, absl::Seconds(7));
  ASSERT_EQ(f->health_listen.size(), 1u);
  EXPECT_EQ(f->health_listen[0], "0.0.0.0:7071");
}

TEST(ServerFlagsTest, RejectsBadValues) {
  for (absl::string_view bad :
       {"--listen=tcp:nocolon", "--listen=unix:", "--listen=udp:x:1", "--workers=0",
        "--socket-mode=0999", "--socket-mode=rw", "--max-frames=0",
        "--max-frames=99999999", "--request-timeout=-1", "--max-mapping-tables=0",
        "--max-mapping-table-bytes=12", "--bogus", "pid",
        "--max-connection-age=-1", "--max-connection-age-grace=x",
        "--health-listen=unix:/x", "--health-listen=tcp:nocolon"}) {
    EXPECT_EQ(Parse({bad}).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  absl::StatusOr<ServerFlags> help = Parse({"--help"});
  ASSERT_TRUE(help.ok());
  EXPECT_TRUE(help->help);
  absl::StatusOr<ServerFlags> version = Parse({"--version"});
  ASSERT_TRUE(version.ok());
  EXPECT_TRUE(version->version);
  EXPECT_FALSE(version->help);
  EXPECT_FALSE(Parse({})->version);
}

TEST(ServerFlagsTest, TlsFlagsAndRules) {
  absl::StatusOr<ServerFlags> f = Parse(
      {"--listen=tcp:0.0.0.0:7070", "--tls-cert=/s.pem", "--tls-key=/s.key",
       "--tls-client-ca=/ca.pem", "--tls-allow=profiler=snapshots,cores",
       "--tls-allow=spiffe://x/y=z=processes", "--tls-allow=idle=none"});
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_TRUE(f->tls.enabled());
  EXPECT_TRUE(f->service.tls);
  EXPECT_EQ(f->tls.cert, "/s.pem");
  EXPECT_EQ(f->tls.key, "/s.key");
  EXPECT_EQ(f->tls.client_ca, "/ca.pem");
  ASSERT_EQ(f->service.tls_allow.size(), 3u);
  EXPECT_EQ(f->service.tls_allow[0].identity, "profiler");
  EXPECT_EQ(f->service.tls_allow[0].permissions, kPermitSnapshots | kPermitCores);
  EXPECT_EQ(f->service.tls_allow[1].identity, "spiffe://x/y=z");  // the last '='
  EXPECT_EQ(f->service.tls_allow[1].permissions, uint32_t{kPermitProcesses});
  EXPECT_EQ(f->service.tls_allow[2].permissions, 0u);
  EXPECT_EQ(PermissionNames(f->service.tls_allow[0].permissions), "snapshots,cores");
  EXPECT_EQ(PermissionNames(0), "none");
  // Plain TCP is still what it was.
  absl::StatusOr<ServerFlags> plain = Parse({"--listen=tcp:0.0.0.0:7070"});
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->service.tls);
}

TEST(ServerFlagsTest, RejectsIncompleteOrContradictoryTls) {
  const std::vector<std::vector<absl::string_view>> bad = {
      // Not all three files.
      {"--listen=tcp:h:1", "--tls-cert=/c", "--tls-key=/k"},
      {"--listen=tcp:h:1", "--tls-client-ca=/ca"},
      // Rules without TLS, or TLS without a TCP listener.
      {"--listen=tcp:h:1", "--tls-allow=a=snapshots"},
      {"--tls-cert=/c", "--tls-key=/k", "--tls-client-ca=/ca"},
      // TLS replaces --allow-tcp-unwind-any.
      {"--listen=tcp:h:1", "--tls-cert=/c", "--tls-key=/k", "--tls-client-ca=/ca",
       "--allow-tcp-unwind-any"},
      // Malformed rules.
      {"--tls-allow=noequals"}, {"--tls-allow==snapshots"}, {"--tls-allow=a=root"},
      {"--tls-allow=a="}, {"--tls-allow=a=snapshots,"},
      {"--tls-allow=a=snapshots", "--tls-allow=a=cores"},
  };
  for (const std::vector<absl::string_view>& args : bad) {
    EXPECT_EQ(Parse(args).status().code(), absl::StatusCode::kInvalidArgument)
        << args.back();
  }
  std::string long_identity(kMaxTlsIdentityBytes + 1, 'x');
  EXPECT_FALSE(ParseTlsRule(long_identity + "=cores").ok());
}

}  // namespace
}  // namespace unwindd::service
