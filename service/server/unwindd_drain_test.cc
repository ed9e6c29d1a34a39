// What a client of the real unwindd sees when it drains on SIGTERM, and
// when a stream reaches its age (docs/fleet.md "Draining", "Stream
// lifetime"): health turns NOT_SERVING first; new calls get UNAVAILABLE; a
// core being streamed when the signal came is answered in full, equal to
// the answer before; snapshot streams end with UNAVAILABLE (an idle one at
// once, a busy one after answering its message); the server exits 0.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "proto/grpc/health/v1/health.grpc.pb.h"
#include "service/server/testing/server_fixture.h"
#include "testdata/harness/tools.h"

namespace unwindd::service {
namespace {

using grpc::health::v1::Health;
using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;
using testing::ServerProcess;
using testing::TempDir;

// A small aarch64 core (xz) and its executable, committed fixtures.
std::string Fixture(const std::string& name) {
  return harness::FixturePath("aarch64/" + name);
}

v1::UnwindCoreRequest CoreOptions(size_t size) {
  v1::UnwindCoreRequest m;
  m.mutable_options()->set_streamed_size(size);
  m.mutable_options()->set_exe(Fixture("threads_O2_nofp"));
  return m;
}

v1::UnwindCoreRequest Chunk(const std::string& bytes, size_t from, size_t to) {
  v1::UnwindCoreRequest m;
  m.set_chunk(bytes.substr(from, to - from));
  return m;
}

grpc::Status UnwindWhole(v1::Unwinder::Stub& stub, const std::string& core,
                         v1::UnwindResponse* out) {
  grpc::ClientContext c;
  auto w = stub.UnwindCore(&c, out);
  w->Write(CoreOptions(core.size()));
  w->Write(Chunk(core, 0, core.size()));
  w->WritesDone();
  return w->Finish();
}

// Waits for the child to exit (it is ours: ServerProcess forked it).
int WaitExit(pid_t pid, absl::Duration timeout) {
  const absl::Time end = absl::Now() + timeout;
  while (absl::Now() < end) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    absl::SleepFor(absl::Milliseconds(10));
  }
  return -1;
}

class DrainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (the socket's peer is a root caller)";
    core_ = testing::ReadFile(Fixture("threads_O2_nofp.core.xz"));
    ASSERT_GT(core_.size(), 1000u);
  }
  std::string core_;
};

TEST_F(DrainTest, SigtermDrainsWithoutLosingARequest) {
  TempDir dir;
  absl::StatusOr<std::unique_ptr<ServerProcess>> s =
      ServerProcess::Start(dir.path(), {"--drain-timeout=20"});
  ASSERT_TRUE(s.ok()) << s.status();
  ServerProcess& server = **s;
  std::shared_ptr<grpc::Channel> channel = server.NewChannel();
  auto stub = v1::Unwinder::NewStub(channel);

  // The answer before any drain.
  v1::UnwindResponse before;
  grpc::Status st = UnwindWhole(*stub, core_, &before);
  ASSERT_TRUE(st.ok()) << st.error_message();
  ASSERT_GT(before.threads_size(), 0);

  // A health watch, as a load balancer keeps.
  auto health = Health::NewStub(channel);
  grpc::ClientContext watch_context;
  HealthCheckRequest hr;
  auto watch = health->Watch(&watch_context, hr);
  HealthCheckResponse hs;
  ASSERT_TRUE(watch->Read(&hs));
  EXPECT_EQ(hs.status(), HealthCheckResponse::SERVING);

  // A snapshot stream that has had its answer and waits (idle).
  grpc::ClientContext idle_context;
  auto idle = stub->UnwindSnapshots(&idle_context);
  v1::SnapshotRequest empty;  // invalid: answered with an error, stream open
  ASSERT_TRUE(idle->Write(empty));
  v1::SnapshotResponse sr;
  ASSERT_TRUE(idle->Read(&sr));
  EXPECT_TRUE(sr.has_error());

  // A core half sent when the signal comes: in flight.
  grpc::ClientContext core_context;
  v1::UnwindResponse during;
  auto core = stub->UnwindCore(&core_context, &during);
  ASSERT_TRUE(core->Write(CoreOptions(core_.size())));
  ASSERT_TRUE(core->Write(Chunk(core_, 0, core_.size() / 2)));
  absl::SleepFor(absl::Milliseconds(300));  // the handler is reading it

  const absl::Time sigterm = absl::Now();
  ASSERT_EQ(kill(server.pid(), SIGTERM), 0);

  // Health first: the watch sees NOT_SERVING while the core still runs.
  ASSERT_TRUE(watch->Read(&hs));
  EXPECT_EQ(hs.status(), HealthCheckResponse::NOT_SERVING);
  EXPECT_LT(absl::Now() - sigterm, absl::Seconds(2));

  // New calls, on the same channel (its connection has had a GOAWAY) and
  // on a new one (the listener is closed): UNAVAILABLE, which clients retry
  // elsewhere. A bounded deadline: no wait for a server that went away.
  for (bool fresh : {false, true}) {
    auto s2 = fresh ? v1::Unwinder::NewStub(server.NewChannel())
                    : v1::Unwinder::NewStub(channel);
    grpc::ClientContext c;
    c.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    v1::GetStatsRequest req;
    v1::Stats out;
    v1::UnwindResponse r;
    auto w = s2->UnwindCore(&c, &r);
    w->Write(CoreOptions(core_.size()));
    w->WritesDone();
    grpc::Status ns = w->Finish();
    EXPECT_EQ(ns.error_code(), grpc::StatusCode::UNAVAILABLE)
        << (fresh ? "new channel: " : "same channel: ") << ns.error_message();
  }

  // The in-flight core is answered in full, as before the drain.
  ASSERT_TRUE(core->Write(Chunk(core_, core_.size() / 2, core_.size())));
  core->WritesDone();
  st = core->Finish();
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(during.SerializeAsString(), before.SerializeAsString());

  // The idle stream ends with UNAVAILABLE (not CANCELLED): clients reopen.
  EXPECT_FALSE(idle->Read(&sr));
  grpc::Status is = idle->Finish();
  EXPECT_EQ(is.error_code(), grpc::StatusCode::UNAVAILABLE) << is.error_message();
  EXPECT_TRUE(absl::StrContains(is.error_message(), "draining")) << is.error_message();

  // The watch ends too, and the server exits 0 well before the timeout.
  while (watch->Read(&hs)) {
  }
  watch->Finish();
  EXPECT_EQ(WaitExit(server.pid(), absl::Seconds(10)), 0) << server.Stderr();
  EXPECT_LT(absl::Now() - sigterm, absl::Seconds(8));
  EXPECT_TRUE(absl::StrContains(server.Stderr(), "unwindd: stopped")) << server.Stderr();
}

// A stream busy with a message when the drain begins answers it first.
TEST_F(DrainTest, AStreamDrainingAnswersItsMessageThenEnds) {
  TempDir dir;
  absl::StatusOr<std::unique_ptr<ServerProcess>> s =
      ServerProcess::Start(dir.path(), {"--drain-timeout=20"});
  ASSERT_TRUE(s.ok()) << s.status();
  ServerProcess& server = **s;
  auto stub = server.Stub();
  // A core in flight holds the drain open while the stream sends.
  grpc::ClientContext core_context;
  v1::UnwindResponse r;
  auto core = stub->UnwindCore(&core_context, &r);
  ASSERT_TRUE(core->Write(CoreOptions(core_.size())));
  ASSERT_TRUE(core->Write(Chunk(core_, 0, 10)));
  grpc::ClientContext c;
  auto stream = stub->UnwindSnapshots(&c);
  v1::SnapshotRequest empty;
  v1::SnapshotResponse sr;
  ASSERT_TRUE(stream->Write(empty));
  ASSERT_TRUE(stream->Read(&sr));
  absl::SleepFor(absl::Milliseconds(300));
  ASSERT_EQ(kill(server.pid(), SIGTERM), 0);
  absl::SleepFor(absl::Milliseconds(300));
  // Sent after the drain began: answered, then the stream ends.
  ASSERT_TRUE(stream->Write(empty));
  ASSERT_TRUE(stream->Read(&sr));
  EXPECT_TRUE(sr.has_error());
  EXPECT_FALSE(stream->Read(&sr));
  grpc::Status st = stream->Finish();
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAVAILABLE) << st.error_message();
  EXPECT_TRUE(absl::StrContains(st.error_message(), "every message so far is answered"))
      << st.error_message();
  ASSERT_TRUE(core->Write(Chunk(core_, 10, core_.size())));
  core->WritesDone();
  EXPECT_TRUE(core->Finish().ok());
  EXPECT_EQ(WaitExit(server.pid(), absl::Seconds(10)), 0) << server.Stderr();
}

// --max-connection-age: a stream older than it ends after its next
// message, with UNAVAILABLE naming the age; a new stream then works.
TEST_F(DrainTest, StreamsEndAfterTheirAge) {
  TempDir dir;
  absl::StatusOr<std::unique_ptr<ServerProcess>> s = ServerProcess::Start(
      dir.path(), {"--max-connection-age=2", "--max-connection-age-grace=5"});
  ASSERT_TRUE(s.ok()) << s.status();
  auto stub = (*s)->Stub();
  grpc::ClientContext c;
  auto stream = stub->UnwindSnapshots(&c);
  v1::SnapshotRequest empty;
  v1::SnapshotResponse sr;
  ASSERT_TRUE(stream->Write(empty));
  ASSERT_TRUE(stream->Read(&sr));
  absl::SleepFor(absl::Milliseconds(2300));
  ASSERT_TRUE(stream->Write(empty));
  ASSERT_TRUE(stream->Read(&sr));  // answered first
  EXPECT_FALSE(stream->Read(&sr));
  grpc::Status st = stream->Finish();
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAVAILABLE) << st.error_message();
  EXPECT_TRUE(absl::StrContains(st.error_message(), "maximum age")) << st.error_message();
  // The client goes on with a new stream (on a new connection).
  grpc::ClientContext c2;
  auto again = stub->UnwindSnapshots(&c2);
  ASSERT_TRUE(again->Write(empty));
  ASSERT_TRUE(again->Read(&sr));
  again->WritesDone();
  EXPECT_TRUE(again->Finish().ok());
  EXPECT_EQ((*s)->Terminate(), 0);
}

// --max-connection-age: the server closes an old connection (GOAWAY): a
// channel that keeps calling ends up on a new connection, with no failed call.
TEST_F(DrainTest, OldConnectionsAreReplacedWithoutAFailedCall) {
  TempDir dir;
  absl::StatusOr<std::unique_ptr<ServerProcess>> s = ServerProcess::Start(
      dir.path(), {"--max-connection-age=1", "--max-connection-age-grace=5"});
  ASSERT_TRUE(s.ok()) << s.status();
  std::shared_ptr<grpc::Channel> channel = (*s)->NewChannel();
  auto stub = v1::Unwinder::NewStub(channel);
  const absl::Time end = absl::Now() + absl::Seconds(4);
  int calls = 0;
  while (absl::Now() < end) {
    grpc::ClientContext c;
    v1::GetStatsRequest req;
    v1::Stats out;
    grpc::Status st = stub->GetStats(&c, req, &out);
    ASSERT_TRUE(st.ok()) << st.error_message();
    ++calls;
    absl::SleepFor(absl::Milliseconds(20));
  }
  EXPECT_GT(calls, 50);
  v1::Stats stats;
  grpc::ClientContext c;
  ASSERT_TRUE(stub->GetStats(&c, v1::GetStatsRequest(), &stats).ok());
  // One connection per age at least (the fixture's health check had one).
  EXPECT_GE(stats.connections(), 3u) << stats.DebugString();
  EXPECT_EQ((*s)->Terminate(), 0);
}

// --health-listen: plain TCP with only the health service (kubelet's gRPC
// probes), which follows the server's status through the drain.
TEST_F(DrainTest, HealthListenerServesOnlyHealthAndTurnsNotServing) {
  TempDir dir;
  absl::StatusOr<std::unique_ptr<ServerProcess>> s = ServerProcess::Start(
      dir.path(), {"--health-listen=tcp:127.0.0.1:0", "--drain-timeout=20"});
  ASSERT_TRUE(s.ok()) << s.status();
  ServerProcess& server = **s;
  int port = 0;  // printed just after the health service starts answering
  for (int i = 0; i < 500 && (port = server.TcpPort()) == 0; ++i) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  ASSERT_GT(port, 0) << server.Stderr();
  EXPECT_TRUE(absl::StrContains(server.Stderr(), "for grpc.health.v1 only")) << server.Stderr();
  auto probe = grpc::CreateChannel(absl::StrCat("127.0.0.1:", port),
                                   grpc::InsecureChannelCredentials());
  auto check = [&](const std::string& service) {
    HealthCheckRequest req;
    req.set_service(service);
    HealthCheckResponse resp;
    grpc::ClientContext c;
    c.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    grpc::Status st = Health::NewStub(probe)->Check(&c, req, &resp);
    return st.ok() ? resp.status() : HealthCheckResponse::UNKNOWN;
  };
  EXPECT_EQ(check(""), HealthCheckResponse::SERVING);
  EXPECT_EQ(check("unwindd.v1.Unwinder"), HealthCheckResponse::SERVING);
  {
    grpc::ClientContext c;
    v1::Stats out;
    grpc::Status st = v1::Unwinder::NewStub(probe)->GetStats(&c, v1::GetStatsRequest(), &out);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::UNIMPLEMENTED) << st.error_message();
  }
  // A core in flight keeps the drain going while the probe looks.
  auto stub = server.Stub();
  grpc::ClientContext core_context;
  v1::UnwindResponse r;
  auto core = stub->UnwindCore(&core_context, &r);
  ASSERT_TRUE(core->Write(CoreOptions(core_.size())));
  ASSERT_TRUE(core->Write(Chunk(core_, 0, 10)));
  absl::SleepFor(absl::Milliseconds(300));
  ASSERT_EQ(kill(server.pid(), SIGTERM), 0);
  absl::SleepFor(absl::Milliseconds(300));
  EXPECT_EQ(check("unwindd.v1.Unwinder"), HealthCheckResponse::NOT_SERVING);
  ASSERT_TRUE(core->Write(Chunk(core_, 10, core_.size())));
  core->WritesDone();
  EXPECT_TRUE(core->Finish().ok());
  EXPECT_EQ(WaitExit(server.pid(), absl::Seconds(10)), 0) << server.Stderr();
}

}  // namespace
}  // namespace unwindd::service
