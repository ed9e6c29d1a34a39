// TLS with client certificates on unwindd's TCP listener, end to end: the
// real server with --tls-cert/--tls-key/--tls-client-ca and two
// --tls-allow rules, clients with certificates made at test time by
// testing/make_tls_certs.sh (openssl):
//
//   profiler  SAN DNS:profiler (CN profiler-cn)  --tls-allow=profiler=snapshots
//   debugger  CN debugger, no SAN                --tls-allow=debugger=processes,cores
//   stranger  signed by the CA, in no rule
//   rogue     CN debugger, signed by another CA
//
// The handshake refuses a client without a certificate or with the other
// CA's; each identity gets what its rule grants and PERMISSION_DENIED
// naming the rule otherwise; the CLI unwinds through TLS.
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "service/server/testing/capture.h"
#include "service/server/testing/server_fixture.h"
#include "service/server/testing/snapshot_streams.h"
#include "testdata/harness/subprocess.h"
#include "testdata/harness/tools.h"

namespace unwindd::service {
namespace {

using testing::ServerProcess;
using testing::TempDir;

constexpr char kFixture[] = "threads_c_O2_nofp_pie";

// pc, sp, method, rel_pc and whether a module was found, per frame (what
// UnwindProcess and UnwindSnapshots both fill).
using FrameKey = std::tuple<uint64_t, uint64_t, int, uint64_t, bool>;

std::vector<FrameKey> Keys(const v1::ThreadStack& t) {
  std::vector<FrameKey> out;
  for (const v1::Frame& f : t.frames()) {
    out.emplace_back(f.pc(), f.sp(), f.method(), f.rel_pc(), f.has_module());
  }
  return out;
}

using testing::CopyFile;
using testing::ReadFile;

class TlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (access("/usr/bin/openssl", X_OK) != 0) GTEST_SKIP() << "needs openssl";
    certs_ = dir_.path() + "/certs";
    ASSERT_EQ(mkdir(certs_.c_str(), 0755), 0);
    absl::StatusOr<harness::ToolOutput> made = harness::RunTool(
        {"/bin/sh", testing::ServerTestBinary("testing/make_tls_certs.sh"), certs_},
        absl::Seconds(60));
    ASSERT_TRUE(made.ok()) << made.status();
    ASSERT_EQ(made->exit_code, 0) << made->stderr_text;
    absl::StatusOr<std::unique_ptr<ServerProcess>> s = ServerProcess::Start(
        dir_.path(), {"--listen=tcp:127.0.0.1:0", Flag("--tls-cert=", "server.pem"),
                      Flag("--tls-key=", "server.key"), Flag("--tls-client-ca=", "ca.pem"),
                      "--tls-allow=profiler=snapshots",
                      "--tls-allow=debugger=processes,cores"});
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = *std::move(s);
    port_ = server_->TcpPort();
    ASSERT_NE(port_, 0) << server_->Stderr();
  }

  std::string Flag(const std::string& flag, const std::string& file) const {
    return flag + certs_ + "/" + file;
  }

  // A stub on the TLS port: trusting the test CA, presenting `who`'s
  // certificate ("" for none).
  std::unique_ptr<v1::Unwinder::Stub> Stub(const std::string& who) const {
    grpc::SslCredentialsOptions o;
    o.pem_root_certs = ReadFile(certs_ + "/ca.pem");
    if (!who.empty()) {
      o.pem_cert_chain = ReadFile(absl::StrCat(certs_, "/", who, ".pem"));
      o.pem_private_key = ReadFile(absl::StrCat(certs_, "/", who, ".key"));
    }
    return v1::Unwinder::NewStub(grpc::CreateChannel(
        absl::StrCat("127.0.0.1:", port_), grpc::SslCredentials(o)));
  }

  // The fixture, run from a copy in the test's /tmp directory: a TCP caller
  // opens files as nobody, who cannot enter Bazel's runfiles under /root.
  harness::RunningProgram StartFixture() {
    const std::string path = dir_.path() + "/fixture";
    EXPECT_TRUE(CopyFile(harness::FixturePath(kFixture), path, 0755));
    absl::StatusOr<harness::RunningProgram> p = harness::StartProgram(path);
    EXPECT_TRUE(p.ok()) << p.status();
    return std::move(*p);
  }

  // UnwindProcess as root over the Unix socket: what the fixture looks like.
  v1::UnwindResponse Reference(pid_t pid) const {
    v1::UnwindProcessRequest r;
    r.set_pid(pid);
    grpc::ClientContext c;
    v1::UnwindResponse out;
    grpc::Status s = server_->Stub()->UnwindProcess(&c, r, &out);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return out;
  }

  static grpc::Status UnwindProcess(v1::Unwinder::Stub& stub, pid_t pid,
                                    v1::UnwindResponse* out) {
    v1::UnwindProcessRequest r;
    r.set_pid(pid);
    grpc::ClientContext c;
    c.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    return stub.UnwindProcess(&c, r, out);
  }

  static grpc::Status GetStats(v1::Unwinder::Stub& stub) {
    grpc::ClientContext c;
    c.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    v1::Stats out;
    return stub.GetStats(&c, v1::GetStatsRequest(), &out);
  }

  // A streamed "core" of a few bytes: refused or accepted before it is
  // parsed, which is all the permission check needs.
  static grpc::Status UnwindCore(v1::Unwinder::Stub& stub) {
    grpc::ClientContext c;
    c.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    v1::UnwindResponse out;
    auto w = stub.UnwindCore(&c, &out);
    v1::UnwindCoreRequest first;
    first.mutable_options()->set_streamed_size(4);
    v1::UnwindCoreRequest chunk;
    chunk.set_chunk("\x7f" "ELF");
    w->Write(first);
    w->Write(chunk);
    w->WritesDone();
    return w->Finish();
  }

  TempDir dir_;
  std::string certs_;
  std::unique_ptr<ServerProcess> server_;
  int port_ = 0;
};

TEST_F(TlsTest, HandshakeNeedsAClientCertificateFromTheClientCa) {
  EXPECT_EQ(GetStats(*Stub("")).error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(GetStats(*Stub("rogue")).error_code(), grpc::StatusCode::UNAVAILABLE);
  // Plain gRPC on the TLS port gets nowhere either.
  auto plain = v1::Unwinder::NewStub(grpc::CreateChannel(
      absl::StrCat("127.0.0.1:", port_), grpc::InsecureChannelCredentials()));
  EXPECT_EQ(GetStats(*plain).error_code(), grpc::StatusCode::UNAVAILABLE);
  // The same call with a good certificate: the failures above are the
  // handshake's, not the server's.
  EXPECT_TRUE(GetStats(*Stub("debugger")).ok());
  // None of them reached a handler.
  EXPECT_EQ(server_->RequestLog(), "");
  EXPECT_NE(server_->Stderr().find("with TLS, client certificates required"),
            std::string::npos)
      << server_->Stderr();
}

TEST_F(TlsTest, SnapshotsIdentityGetsSnapshotsOnly) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (captures ptrace fixtures)";
  harness::RunningProgram p = StartFixture();
  v1::UnwindResponse want = Reference(p.pid());
  ASSERT_GT(want.threads_size(), 1);
  // Samples as perf would give them, naming the live pid as well.
  testing::CaptureOptions o;
  o.mappings = testing::CaptureOptions::Mappings::kWithBuildIds;
  absl::StatusOr<std::vector<v1::SnapshotRequest>> samples =
      testing::CaptureSamples(p.pid(), o);
  ASSERT_TRUE(samples.ok()) << samples.status();

  auto profiler = Stub("profiler");  // matched by its SAN, not its CN
  grpc::Status status;
  std::vector<v1::SnapshotResponse> got = testing::Stream(*profiler, *samples, &status);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(static_cast<int>(got.size()), want.threads_size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_FALSE(got[i].has_error()) << got[i].error().message();
    // From the stack copy and the files (opened as nobody) alone: the pid
    // is not used, and the answer says why.
    EXPECT_NE(got[i].pid_ignored_reason().find("may not read process"), std::string::npos)
        << got[i].pid_ignored_reason();
    EXPECT_EQ(Keys(got[i].stack()), Keys(want.threads(i)))
        << "thread " << want.threads(i).tid();
  }
  // A sample with only the pid would need the process itself.
  v1::SnapshotRequest pid_only = (*samples)[0];
  pid_only.clear_mappings();
  got = testing::Stream(*profiler, {pid_only}, &status);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].error().code(), grpc::StatusCode::PERMISSION_DENIED)
      << got[0].error().message();

  v1::UnwindResponse r;
  grpc::Status s = UnwindProcess(*profiler, p.pid(), &r);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(s.error_message().find("--tls-allow=profiler=snapshots does not grant "
                                   "'processes'"),
            std::string::npos)
      << s.error_message();
  s = UnwindCore(*profiler);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << s.error_message();
  EXPECT_TRUE(GetStats(*profiler).ok());
  for (int tracer : testing::TracerPids(p.pid())) EXPECT_EQ(tracer, 0);
  EXPECT_NE(server_->RequestLog().find("\"caller\": \"tls=profiler@ipv4:127.0.0.1:"),
            std::string::npos)
      << server_->RequestLog();
}

TEST_F(TlsTest, ProcessesIdentityUnwindsALiveProcess) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (unwinds a root-owned fixture)";
  harness::RunningProgram p = StartFixture();
  v1::UnwindResponse want = Reference(p.pid());
  v1::UnwindResponse got;
  auto debugger = Stub("debugger");  // matched by its CN (it has no SAN)
  grpc::Status s = UnwindProcess(*debugger, p.pid(), &got);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(got.threads_size(), want.threads_size());
  for (int i = 0; i < want.threads_size(); ++i) {
    EXPECT_GT(got.threads(i).frames_size(), 2);
    EXPECT_EQ(Keys(got.threads(i)), Keys(want.threads(i)));
  }
  // 'cores' too: past the permission check, the bytes are not a core.
  s = UnwindCore(*debugger);
  EXPECT_NE(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << s.error_message();
  EXPECT_NE(s.error_code(), grpc::StatusCode::OK);
  for (int tracer : testing::TracerPids(p.pid())) EXPECT_EQ(tracer, 0);
}

TEST_F(TlsTest, UnlistedIdentityMayDoNothing) {
  harness::RunningProgram p = StartFixture();
  auto stranger = Stub("stranger");
  v1::UnwindResponse r;
  grpc::Status s = UnwindProcess(*stranger, p.pid(), &r);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(s.error_message().find("no --tls-allow rule names the client certificate "
                                   "(stranger)"),
            std::string::npos)
      << s.error_message();
  EXPECT_EQ(UnwindCore(*stranger).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  s = GetStats(*stranger);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(s.error_message().find("no --tls-allow rule names its certificate"),
            std::string::npos)
      << s.error_message();
  v1::SnapshotRequest sample;
  sample.set_arch(v1::ARCH_X86_64);
  grpc::Status status;
  std::vector<v1::SnapshotResponse> got = testing::Stream(*stranger, {sample}, &status);
  EXPECT_TRUE(got.empty());
  EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED)
      << status.error_message();
}

// `unwind --server=tcp:... --tls-*` prints what it prints over the Unix
// socket; without the flags it cannot get in.
TEST_F(TlsTest, CliUnwindsThroughTls) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (unwinds a root-owned fixture)";
  harness::RunningProgram p = StartFixture();
  auto cli = [&](std::vector<std::string> args) {
    args.insert(args.begin(), testing::ServiceBinary("unwind"));
    absl::StatusOr<harness::ToolOutput> out = harness::RunTool(args, absl::Seconds(60));
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? *out : harness::ToolOutput{};
  };
  const std::string pid = absl::StrCat(p.pid());
  harness::ToolOutput want =
      cli({absl::StrCat("--server=", server_->address()), "pid", pid, "--format=json"});
  ASSERT_EQ(want.exit_code, 0) << want.stderr_text;
  const std::string tcp = absl::StrCat("--server=tcp:127.0.0.1:", port_);
  harness::ToolOutput got =
      cli({tcp, Flag("--tls-ca=", "ca.pem"), Flag("--tls-cert=", "debugger.pem"),
           Flag("--tls-key=", "debugger.key"), "pid", pid, "--format=json"});
  EXPECT_EQ(got.exit_code, 0) << got.stderr_text;
  EXPECT_EQ(got.stdout_text, want.stdout_text);
  EXPECT_NE(got.stdout_text.find("\"frames\""), std::string::npos) << got.stdout_text;

  harness::ToolOutput plain = cli({tcp, "pid", pid});
  EXPECT_EQ(plain.exit_code, 1);
  EXPECT_NE(plain.stderr_text.find("cannot reach unwindd"), std::string::npos)
      << plain.stderr_text;
  harness::ToolOutput profiler =
      cli({tcp, Flag("--tls-ca=", "ca.pem"), Flag("--tls-cert=", "profiler.pem"),
           Flag("--tls-key=", "profiler.key"), "pid", pid});
  EXPECT_EQ(profiler.exit_code, 1);
  EXPECT_NE(profiler.stderr_text.find("does not grant 'processes'"), std::string::npos)
      << profiler.stderr_text;
}

// Debian's python3-grpcio as a TLS client (grpc.ssl_channel_credentials)
// with the snapshots identity: testing/snapshot_client.py sends a mapping
// table once and samples naming it, on both snapshot RPCs, and each
// sample's frames must equal what `unwind pid --format=json` prints.
TEST_F(TlsTest, PythonClientStreamsSnapshotsThroughTls) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (captures ptrace fixtures)";
  harness::RunningProgram p = StartFixture();
  absl::StatusOr<harness::ToolOutput> cli = harness::RunTool(
      {testing::ServiceBinary("unwind"), "pid", absl::StrCat(p.pid()), "--format=json"},
      absl::Seconds(60));
  ASSERT_TRUE(cli.ok()) << cli.status();
  ASSERT_EQ(cli->exit_code, 0) << cli->stderr_text;
  testing::CaptureOptions o;
  o.with_pid = false;
  absl::StatusOr<std::vector<v1::SnapshotRequest>> samples =
      testing::CaptureSamples(p.pid(), o);
  ASSERT_TRUE(samples.ok()) << samples.status();
  v1::SnapshotBatch captured;
  for (const v1::SnapshotRequest& r : *samples) *captured.add_samples() = r;
  const std::string samples_file = dir_.path() + "/samples.bin";
  const std::string cli_file = dir_.path() + "/cli.json";
  std::ofstream(samples_file, std::ios::binary) << captured.SerializeAsString();
  std::ofstream(cli_file) << cli->stdout_text;

  const std::string root = harness::RunfilesRoot();
  auto python = [&](const std::string& who) {
    std::vector<std::string> argv = {
        "/usr/bin/python3", root + "/service/server/testing/snapshot_client.py",
        absl::StrCat("--target=127.0.0.1:", port_), Flag("--tls-ca=", "ca.pem"),
        "--samples=" + samples_file, "--cli-json=" + cli_file,
        "--pb2-dir=" + root + "/service/server/python"};
    if (!who.empty()) {
      argv.push_back(Flag("--tls-cert=", who + ".pem"));
      argv.push_back(Flag("--tls-key=", who + ".key"));
    }
    absl::StatusOr<harness::ToolOutput> out = harness::RunTool(argv, absl::Seconds(120));
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? *out : harness::ToolOutput{};
  };
  harness::ToolOutput profiler = python("profiler");
  EXPECT_EQ(profiler.exit_code, 0) << profiler.stderr_text;
  EXPECT_TRUE(absl::StrContains(profiler.stdout_text,
                                absl::StrCat("matched ", samples->size(), " threads")))
      << profiler.stdout_text << profiler.stderr_text;
  // Without a certificate the handshake fails: grpcio raises UNAVAILABLE.
  harness::ToolOutput anonymous = python("");
  EXPECT_NE(anonymous.exit_code, 0);
  EXPECT_TRUE(absl::StrContains(anonymous.stderr_text, "UNAVAILABLE"))
      << anonymous.stderr_text;
}

// Plain TCP works as before (snapshots and cores, processes refused
// without --allow-tcp-unwind-any), and unwindd warns about it.
TEST(PlainTcpTest, IsWarnedAbout) {
  TempDir dir;
  absl::StatusOr<std::unique_ptr<ServerProcess>> s =
      ServerProcess::Start(dir.path(), {"--listen=tcp:127.0.0.1:0"});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_NE((*s)->Stderr().find("is plain TCP: unencrypted, and its callers have no "
                                "identity"),
            std::string::npos)
      << (*s)->Stderr();
  auto stub = v1::Unwinder::NewStub(grpc::CreateChannel(
      absl::StrCat("127.0.0.1:", (*s)->TcpPort()), grpc::InsecureChannelCredentials()));
  v1::UnwindProcessRequest r;
  r.set_pid(getpid());
  v1::UnwindResponse out;
  grpc::ClientContext c;
  grpc::Status st = stub->UnwindProcess(&c, r, &out);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(st.error_message().find("--allow-tcp-unwind-any"), std::string::npos)
      << st.error_message();
}

}  // namespace
}  // namespace unwindd::service
