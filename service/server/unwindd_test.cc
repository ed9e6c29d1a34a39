// The real unwindd on a temporary Unix socket, called through real gRPC
// channels: UnwindProcess against fixture processes (frames identical to the
// in-process CLI's JSON, byte for byte), `unwind --server`, errors and
// limits, per-pid serialization, health, reflection, stats, TCP, SIGTERM.
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/dynamic_message.h"
#include "google/protobuf/message.h"
#include "grpcpp/generic/generic_stub.h"
#include "gtest/gtest.h"
#include "proc/procfs.h"
#include "service/cli/output.h"
#include "service/common/convert.h"
#include "service/server/testing/server_fixture.h"
#include "testdata/harness/subprocess.h"
#include "testdata/harness/tools.h"

namespace unwindd::service {
namespace {

using testing::ServerProcess;
using testing::TempDir;

constexpr char kFixtures[][32] = {"threads_c_O2_nofp_pie", "signal_handler_O2_nofp_pie",
                                  "cxx_catch_O2_nofp_pie", "demo_O0_fp_pie"};

std::unique_ptr<ServerProcess> StartServer(const TempDir& dir,
                                           std::vector<std::string> args = {}) {
  absl::StatusOr<std::unique_ptr<ServerProcess>> s = ServerProcess::Start(dir.path(), args);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *std::move(s) : nullptr;
}

harness::RunningProgram StartFixture(const std::string& name) {
  absl::StatusOr<harness::RunningProgram> p = harness::StartProgram(harness::FixturePath(name));
  EXPECT_TRUE(p.ok()) << p.status();
  return std::move(*p);
}

grpc::Status Unwind(ServerProcess& s, pid_t pid, v1::UnwindResponse* out,
                    uint32_t max_frames = 0) {
  v1::UnwindProcessRequest r;
  r.set_pid(pid);
  r.set_max_frames(max_frames);
  grpc::ClientContext c;
  return s.Stub()->UnwindProcess(&c, r, out);
}

std::string Cli(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {testing::ServiceBinary("unwind")};
  argv.insert(argv.end(), args.begin(), args.end());
  absl::StatusOr<harness::ToolOutput> out = harness::RunTool(argv, absl::Seconds(60));
  EXPECT_TRUE(out.ok()) << out.status();
  if (!out.ok()) return "";
  EXPECT_EQ(out->exit_code, 0) << out->stderr_text;
  return out->stdout_text;
}

class UnwinddTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (unwindd ptraces fixtures)";
    server_ = StartServer(dir_);
    ASSERT_NE(server_, nullptr);
  }
  TempDir dir_;
  std::unique_ptr<ServerProcess> server_;
};

TEST_F(UnwinddTest, HealthServesTheServerAndTheService) {
  EXPECT_TRUE(server_->Serving(""));
  EXPECT_TRUE(server_->Serving("unwindd.v1.Unwinder"));
  EXPECT_FALSE(server_->Serving("no.such.Service"));
}

// Server reflection, spoken with the reflection protocol's own messages
// (compiled into libgrpc++_reflection) through a generic stub.
TEST_F(UnwinddTest, ReflectionListsTheServices) {
  namespace pb = google::protobuf;
  const pb::DescriptorPool* pool = pb::DescriptorPool::generated_pool();
  const pb::Descriptor* req_d =
      pool->FindMessageTypeByName("grpc.reflection.v1alpha.ServerReflectionRequest");
  const pb::Descriptor* resp_d =
      pool->FindMessageTypeByName("grpc.reflection.v1alpha.ServerReflectionResponse");
  ASSERT_NE(req_d, nullptr);
  ASSERT_NE(resp_d, nullptr);
  pb::DynamicMessageFactory factory(pool);
  std::unique_ptr<pb::Message> req(factory.GetPrototype(req_d)->New());
  req->GetReflection()->SetString(req.get(), req_d->FindFieldByName("list_services"), "");
  grpc::GenericStub stub(server_->NewChannel());
  grpc::ClientContext ctx;
  grpc::CompletionQueue cq;
  std::unique_ptr<grpc::GenericClientAsyncReaderWriter> call = stub.PrepareCall(
      &ctx, "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", &cq);
  void* tag;
  bool ok;
  call->StartCall(reinterpret_cast<void*>(1));
  ASSERT_TRUE(cq.Next(&tag, &ok) && ok);
  std::string bytes = req->SerializeAsString();
  grpc::Slice slice(bytes);
  grpc::ByteBuffer out(&slice, 1);
  call->Write(out, reinterpret_cast<void*>(2));
  ASSERT_TRUE(cq.Next(&tag, &ok) && ok);
  grpc::ByteBuffer in;
  call->Read(&in, reinterpret_cast<void*>(3));
  ASSERT_TRUE(cq.Next(&tag, &ok) && ok);
  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(in.Dump(&slices).ok());
  std::string got;
  for (const grpc::Slice& s : slices) got.append(reinterpret_cast<const char*>(s.begin()), s.size());
  std::unique_ptr<pb::Message> resp(factory.GetPrototype(resp_d)->New());
  ASSERT_TRUE(resp->ParseFromString(got));
  std::string text = resp->DebugString();
  EXPECT_NE(text.find("unwindd.v1.Unwinder"), std::string::npos) << text;
  EXPECT_NE(text.find("grpc.health.v1.Health"), std::string::npos) << text;
  call->WritesDone(reinterpret_cast<void*>(4));
  cq.Next(&tag, &ok);
  grpc::Status status;
  call->Finish(&status, reinterpret_cast<void*>(5));
  cq.Next(&tag, &ok);
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
}

TEST_F(UnwinddTest, UnwindProcessGivesTheCliJsonExactly) {
  for (const char* name : kFixtures) {
    harness::RunningProgram p = StartFixture(name);
    std::string cli = Cli({"pid", absl::StrCat(p.pid()), "--format=json"});
    v1::UnwindResponse response;
    grpc::Status s = Unwind(*server_, p.pid(), &response);
    ASSERT_TRUE(s.ok()) << name << ": " << s.error_message();
    absl::StatusOr<unwinder::ProcessStacks> stacks = FromProto(response);
    ASSERT_TRUE(stacks.ok()) << stacks.status();
    EXPECT_EQ(FormatJson(*stacks), cli) << name;
    EXPECT_GT(response.threads_size(), 0);
    for (const v1::Module& m : response.modules()) {
      EXPECT_LT(m.start(), m.end());
      EXPECT_FALSE(m.path().empty());
    }
    for (int tracer : testing::TracerPids(p.pid())) EXPECT_EQ(tracer, 0) << name;
  }
}

// A module path that is not UTF-8: the answer still parses (proto3 strings
// must be UTF-8), carries the exact path in path_bytes, and gives the CLI's
// JSON exactly.
TEST_F(UnwinddTest, PathsThatAreNotUtf8) {
  const std::string dir = dir_.path() + "/bad\xff\xc3(utf8";
  std::filesystem::create_directories(dir);
  const std::string copy = dir + "/threads_\xe9";
  std::filesystem::copy_file(harness::FixturePath("threads_c_O2_nofp_pie"), copy);
  absl::StatusOr<harness::RunningProgram> p = harness::StartProgram(copy);
  ASSERT_TRUE(p.ok()) << p.status();
  v1::UnwindResponse response;
  grpc::Status s = Unwind(*server_, p->pid(), &response);
  ASSERT_TRUE(s.ok()) << s.error_message();
  bool found = false;
  for (const v1::Module& m : response.modules()) {
    if (!absl::EndsWith(m.path_bytes(), "/bad\xff\xc3(utf8/threads_\xe9")) continue;
    found = true;
    EXPECT_TRUE(absl::EndsWith(m.path(), "/bad\xef\xbf\xbd\xef\xbf\xbd(utf8/threads_\xef\xbf\xbd"))
        << m.path();
  }
  EXPECT_TRUE(found) << response.DebugString();
  absl::StatusOr<unwinder::ProcessStacks> stacks = FromProto(response);
  ASSERT_TRUE(stacks.ok()) << stacks.status();
  EXPECT_EQ(FormatJson(*stacks), Cli({"pid", absl::StrCat(p->pid()), "--format=json"}));
}

TEST_F(UnwinddTest, CliServerFlagPrintsWhatTheInProcessCliPrints) {
  harness::RunningProgram p = StartFixture("threads_c_O2_nofp_pie");
  std::string pid = absl::StrCat(p.pid());
  std::string server = absl::StrCat("--server=", server_->address());
  EXPECT_EQ(Cli({server, "pid", pid, "--format=json"}),
            Cli({"pid", pid, "--format=json"}));
  EXPECT_EQ(Cli({"pid", pid, server}), Cli({"pid", pid}));
  EXPECT_EQ(Cli({"pid", pid, "--max-frames=3", server, "--format=json"}),
            Cli({"pid", pid, "--max-frames=3", "--format=json"}));
  EXPECT_EQ(Cli({"pid", pid, "--sources=fp,eh_frame", server, "--format=json"}),
            Cli({"pid", pid, "--sources=fp,eh_frame", "--format=json"}));
}

// `unwind --server=unix:... pid` makes its call itself (HTTP/2 by
// libnghttp2, no gRPC: remote/socket_client.h); everything else with
// --server runs unwind_remote (gRPC). Both must print the same bytes,
// errors included, and exit the same way.
TEST_F(UnwinddTest, SocketClientAndGrpcClientAgree) {
  harness::RunningProgram p = StartFixture("threads_c_O2_nofp_pie");
  const std::string pid = absl::StrCat(p.pid());
  std::string tid;  // a thread other than the main one
  for (const auto& e : std::filesystem::directory_iterator(absl::StrCat("/proc/", pid, "/task"))) {
    if (e.path().filename().string() != pid) tid = e.path().filename().string();
  }
  ASSERT_FALSE(tid.empty());
  const std::string server = absl::StrCat("--server=", server_->address());
  auto run = [](const std::string& binary, const std::vector<std::string>& args) {
    std::vector<std::string> argv = {testing::ServiceBinary(binary)};
    argv.insert(argv.end(), args.begin(), args.end());
    absl::StatusOr<harness::ToolOutput> out = harness::RunTool(argv, absl::Seconds(60));
    EXPECT_TRUE(out.ok()) << out.status();
    return out.value_or(harness::ToolOutput{});
  };
  const std::string gone_server =
      absl::StrCat("--server=unix:", dir_.path(), "/nothing-listens.sock");
  const std::vector<std::vector<std::string>> commands = {
      {server, "pid", pid},
      {server, "pid", pid, "--format=json"},
      {"pid", pid, server, "--max-frames=3", "--tid=" + tid},
      {server, "pid", pid, "--symbols", "--sources=fp,eh_frame"},
      {server, "pid", "1073741808"},                          // no such process
      {server, "pid", absl::StrCat(server_->pid())},          // unwindd itself
      {gone_server, "pid", pid},
  };
  for (const std::vector<std::string>& args : commands) {
    const std::string name = absl::StrJoin(args, " ");
    const harness::ToolOutput grpc = run("unwind_remote", args);
    const harness::ToolOutput socket = run("unwind", args);
    EXPECT_EQ(socket.exit_code, grpc.exit_code) << name;
    EXPECT_EQ(socket.stdout_text, grpc.stdout_text) << name;
    if (args[0] == gone_server) {
      // The reason after the colon is each transport's own.
      EXPECT_TRUE(absl::StartsWith(socket.stderr_text, "unwind: cannot reach unwindd at unix:"))
          << socket.stderr_text;
      EXPECT_TRUE(absl::StartsWith(grpc.stderr_text, "unwind: cannot reach unwindd at unix:"))
          << grpc.stderr_text;
    } else {
      EXPECT_EQ(socket.stderr_text, grpc.stderr_text) << name;
    }
    if (args[0] != gone_server && args.back() != "1073741808" &&
        args.back() != absl::StrCat(server_->pid())) {
      EXPECT_EQ(grpc.exit_code, 0) << name << ": " << grpc.stderr_text;
      EXPECT_TRUE(absl::StrContains(grpc.stdout_text, pid)) << name;
    } else {
      EXPECT_EQ(grpc.exit_code, 1) << name;
    }
  }
}

TEST_F(UnwinddTest, ErrorsHaveCanonicalCodes) {
  v1::UnwindResponse r;
  EXPECT_EQ(Unwind(*server_, 0, &r).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Unwind(*server_, 0x3ffffff0, &r).error_code(), grpc::StatusCode::NOT_FOUND);
  // unwindd will not stop itself.
  EXPECT_EQ(Unwind(*server_, server_->pid(), &r).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  harness::RunningProgram p = StartFixture("threads_c_O2_nofp_pie");
  v1::UnwindProcessRequest req;
  req.set_pid(p.pid());
  req.add_sources(v1::METHOD_SIGNAL);  // not an unwind-info source
  grpc::ClientContext c1;
  EXPECT_EQ(server_->Stub()->UnwindProcess(&c1, req, &r).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  req.clear_sources();
  req.add_tids(1);  // not a thread of the fixture
  grpc::ClientContext c2;
  EXPECT_EQ(server_->Stub()->UnwindProcess(&c2, req, &r).error_code(),
            grpc::StatusCode::NOT_FOUND);
  // A frame limit is a result, not an error.
  ASSERT_TRUE(Unwind(*server_, p.pid(), &r, 2).ok());
  for (const v1::ThreadStack& t : r.threads()) {
    EXPECT_LE(t.frames_size(), 2);
    if (t.frames_size() == 2) {
      EXPECT_EQ(t.stop(), v1::STOP_REASON_MAX_FRAMES);
    }
  }
}

// The request's sources reach the step loop: with frame pointers only, no
// frame comes from .eh_frame; with .eh_frame only, as many frames as the
// default policy finds on this fixture (it has CFI everywhere).
TEST_F(UnwinddTest, SourcesChooseTheUnwindInfo) {
  harness::RunningProgram p = StartFixture("demo_O0_fp_pie");
  v1::UnwindResponse all;
  ASSERT_TRUE(Unwind(*server_, p.pid(), &all).ok());
  for (v1::Method only : {v1::METHOD_FRAME_POINTER, v1::METHOD_EH_FRAME}) {
    v1::UnwindProcessRequest req;
    req.set_pid(p.pid());
    req.add_sources(only);
    v1::UnwindResponse r;
    grpc::ClientContext c;
    ASSERT_TRUE(server_->Stub()->UnwindProcess(&c, req, &r).ok());
    ASSERT_EQ(r.threads_size(), all.threads_size());
    for (int t = 0; t < r.threads_size(); ++t) {
      for (const v1::Frame& f : r.threads(t).frames()) {
        if (only == v1::METHOD_FRAME_POINTER) {
          EXPECT_NE(f.method(), v1::METHOD_EH_FRAME);
        }
      }
      if (only == v1::METHOD_EH_FRAME) {
        EXPECT_EQ(r.threads(t).frames_size(), all.threads(t).frames_size());
      }
    }
  }
  v1::UnwindProcessRequest twice;
  twice.set_pid(p.pid());
  twice.add_sources(v1::METHOD_SFRAME);
  twice.add_sources(v1::METHOD_SFRAME);
  v1::UnwindResponse r;
  grpc::ClientContext c;
  EXPECT_EQ(server_->Stub()->UnwindProcess(&c, twice, &r).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(UnwinddTest, EnumNamesMatchTheCliJsonNames) {
  for (int m = 1; m <= 6; ++m) {
    absl::StatusOr<unwinder::Method> d = FromProto(static_cast<v1::Method>(m));
    ASSERT_TRUE(d.ok());
    std::string name = v1::Method_Name(static_cast<v1::Method>(m)).substr(7);
    EXPECT_EQ(absl::AsciiStrToLower(name), unwinder::MethodName(*d));
  }
  for (int r = 0; r <= 6; ++r) {
    auto reason = static_cast<unwinder::StopReason>(r);
    std::string name = v1::StopReason_Name(ToProto(reason)).substr(12);
    EXPECT_EQ(absl::AsciiStrToLower(name), unwinder::StopReasonName(reason));
  }
}

// ptrace allows one tracer: concurrent requests on one pid only all succeed
// because the server runs them one after the other.
TEST_F(UnwinddTest, ConcurrentRequestsOnOnePidAreSerialized) {
  harness::RunningProgram p = StartFixture("threads_c_O2_nofp_pie");
  harness::RunningProgram q = StartFixture("demo_O0_fp_pie");
  std::vector<grpc::Status> results(8);
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      v1::UnwindResponse r;
      results[i] = Unwind(*server_, i % 4 == 3 ? q.pid() : p.pid(), &r);
    });
  }
  for (std::thread& t : threads) t.join();
  for (const grpc::Status& s : results) EXPECT_TRUE(s.ok()) << s.error_message();
}

// The sanitizer builds compile the fixtures with clang and frame pointers
// (-fsanitize=address keeps them); the default build as their names say.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kFixturesKeepFramePointers = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kFixturesKeepFramePointers = true;
#else
constexpr bool kFixturesKeepFramePointers = false;
#endif
#else
constexpr bool kFixturesKeepFramePointers = false;
#endif

// The thread's state letter ('?' if it cannot be read), and whether
// anyone traces it.
char ThreadState(pid_t pid, pid_t tid) {
  absl::StatusOr<proc::ProcStat> stat = proc::ReadStat(pid, tid);
  return stat.ok() ? stat->state : '?';
}
bool Traced(pid_t pid, pid_t tid) {
  return proc::ReadStatusField(pid, tid, "TracerPid").value_or(-1) != 0;
}

// Threads that do not stop for ptrace (vfork_blocked's two, each waiting
// in vfork for a child that sleeps): the server waits --stop-timeout (1 s)
// for them, walks them from /proc/PID/task/TID/syscall and says so in
// stop_detail; a second request finds them still held by the first and
// walks them at once. Once the children are killed the threads wake, stop
// for the first request's interrupt, and the server, idle, detaches them:
// they run on into pause(), traced by no one.
TEST_F(UnwinddTest, ThreadsThatDoNotStopAreWalkedAndReleased) {
  harness::RunningProgram p = StartFixture("vfork_blocked_O2_nofp_pie");
  const pid_t pid = p.pid();
  for (const char* says : {"did not stop within 1s (state D", "has not stopped since an earlier"}) {
    SCOPED_TRACE(says);
    v1::UnwindResponse r;
    const absl::Time start = absl::Now();
    grpc::Status s = Unwind(*server_, pid, &r);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_LT(absl::Now() - start, absl::Seconds(20));
    ASSERT_EQ(r.threads_size(), 3);
    std::vector<pid_t> unstopped;
    for (const v1::ThreadStack& t : r.threads()) {
      const bool held = absl::StrContains(t.stop_detail(), "not stopped");
      if (held) {
        EXPECT_TRUE(absl::StrContains(t.stop_detail(), says)) << t.stop_detail();
        unstopped.push_back(static_cast<pid_t>(t.tid()));
      }
      if (held && kFixturesKeepFramePointers) {
        // VforkAndWait's CFA is rbp + 16, and the kernel shows no rbp:
        // the walk ends in it (docs/cli.md, "A thread that does not stop").
        EXPECT_EQ(t.stop(), v1::STOP_REASON_NO_UNWIND_INFO) << t.stop_detail();
        EXPECT_GE(t.frames_size(), 2) << t.tid();
        continue;
      }
      EXPECT_EQ(t.stop(), v1::STOP_REASON_END_OF_STACK) << t.stop_detail();
      EXPECT_GE(t.frames_size(), 3) << t.tid();
    }
    ASSERT_EQ(unstopped.size(), 2u);
    for (pid_t tid : unstopped) EXPECT_EQ(ThreadState(pid, tid), 'D');
  }
  // The leader and the forker, each with its vfork child.
  std::vector<pid_t> blocked;
  absl::StatusOr<std::vector<pid_t>> tasks = proc::ListTasks(pid);
  ASSERT_TRUE(tasks.ok()) << tasks.status();
  for (pid_t tid : *tasks) {
    if (ThreadState(pid, tid) == 'D') blocked.push_back(tid);
  }
  ASSERT_EQ(blocked.size(), 2u);
  for (pid_t tid : blocked) {
    absl::StatusOr<std::string> children =
        proc::ReadProcFile(pid, proc::TaskPath(pid, tid, "children"));
    int child = 0;
    ASSERT_TRUE(children.ok() &&
                absl::SimpleAtoi(absl::StripAsciiWhitespace(*children), &child))
        << children.status();
    ASSERT_EQ(kill(child, SIGKILL), 0);
  }
  for (pid_t tid : blocked) {
    bool released = false;
    for (int i = 0; i < 500 && !released; ++i) {
      released = ThreadState(pid, tid) == 'S' && !Traced(pid, tid);
      if (!released) absl::SleepFor(absl::Milliseconds(10));
    }
    EXPECT_TRUE(released) << tid << " state " << ThreadState(pid, tid);
  }
}

TEST_F(UnwinddTest, StatsAndRequestLog) {
  harness::RunningProgram p = StartFixture("threads_c_O2_nofp_pie");
  v1::UnwindResponse r;
  ASSERT_TRUE(Unwind(*server_, p.pid(), &r).ok());
  EXPECT_FALSE(Unwind(*server_, 0x3ffffff0, &r).ok());
  grpc::ClientContext c;
  v1::Stats stats;
  ASSERT_TRUE(server_->Stub()->GetStats(&c, v1::GetStatsRequest(), &stats).ok());
  EXPECT_EQ(stats.process_requests(), 2u);
  EXPECT_GT(stats.frames(), 0u);
  EXPECT_GT(stats.memory_bytes_read(), 0u);
  EXPECT_GT(stats.module_cache_misses(), 0u);
  EXPECT_EQ(stats.errors().at("NOT_FOUND"), 1u);
  EXPECT_GT(stats.stops().at("end_of_stack"), 0u);
  EXPECT_GE(stats.connections(), 1u);
  std::string log = server_->RequestLog();
  EXPECT_NE(log.find(absl::StrCat("\"caller\": \"uid=0\", \"target\": \"pid ", p.pid(),
                                  "\", \"status\": \"OK\"")),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("\"status\": \"NOT_FOUND\""), std::string::npos) << log;
}

TEST_F(UnwinddTest, SigtermDrainsDetachesAndRemovesTheSocket) {
  harness::RunningProgram p = StartFixture("threads_c_O2_nofp_pie");
  // Requests in flight when SIGTERM arrives still get an answer.
  std::vector<std::thread> clients;
  std::atomic<int> answered{0};
  for (int i = 0; i < 4; ++i) {
    clients.emplace_back([&] {
      v1::UnwindResponse r;
      grpc::Status s = Unwind(*server_, p.pid(), &r);
      if (s.ok() || s.error_code() == grpc::StatusCode::UNAVAILABLE) ++answered;
    });
  }
  absl::SleepFor(absl::Milliseconds(5));
  EXPECT_EQ(server_->Terminate(), 0) << server_->Stderr();
  for (std::thread& t : clients) t.join();
  EXPECT_EQ(answered.load(), 4);
  EXPECT_NE(access(server_->socket_path().c_str(), F_OK), 0);
  for (int tracer : testing::TracerPids(p.pid())) EXPECT_EQ(tracer, 0);
  EXPECT_NE(server_->Stderr().find("unwindd: stopped"), std::string::npos);
}

// A stream waiting for its client's next sample holds nothing: SIGTERM
// ends it at once instead of waiting out the drain timeout.
TEST_F(UnwinddTest, SigtermEndsIdleStreamsPromptly) {
  auto stub = server_->Stub();
  grpc::ClientContext c;
  auto stream = stub->UnwindSnapshots(&c);
  v1::SnapshotRequest r;  // invalid: answered with an error, stream open
  ASSERT_TRUE(stream->Write(r));
  v1::SnapshotResponse resp;
  ASSERT_TRUE(stream->Read(&resp));
  EXPECT_TRUE(resp.has_error());
  absl::Time start = absl::Now();
  EXPECT_EQ(server_->Terminate(), 0) << server_->Stderr();
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
  EXPECT_FALSE(stream->Read(&resp));
  EXPECT_FALSE(stream->Finish().ok());
}

TEST(UnwinddTcpTest, TcpCallersMayNotUnwindProcessesUnlessAllowed) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root";
  harness::RunningProgram p = StartFixture("threads_c_O2_nofp_pie");
  for (bool allow : {false, true}) {
    TempDir dir;
    std::vector<std::string> args = {"--listen=tcp:127.0.0.1:0"};
    if (allow) args.push_back("--allow-tcp-unwind-any");
    std::unique_ptr<ServerProcess> s = StartServer(dir, args);
    ASSERT_NE(s, nullptr);
    int port = s->TcpPort();
    ASSERT_GT(port, 0) << s->Stderr();
    auto stub = v1::Unwinder::NewStub(grpc::CreateChannel(
        absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));
    v1::UnwindProcessRequest req;
    req.set_pid(p.pid());
    v1::UnwindResponse r;
    grpc::ClientContext c;
    grpc::Status st = stub->UnwindProcess(&c, req, &r);
    if (allow) {
      EXPECT_TRUE(st.ok()) << st.error_message();
    } else {
      EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED);
      EXPECT_NE(st.error_message().find("--allow-tcp-unwind-any"), std::string::npos);
    }
    EXPECT_EQ(s->Terminate(), 0);
  }
}

TEST(UnwinddFlagsTest, RefusesASecondServerOnTheSameSocket) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root";
  TempDir dir;
  std::unique_ptr<ServerProcess> first = StartServer(dir);
  ASSERT_NE(first, nullptr);
  TempDir other;
  absl::StatusOr<harness::ToolOutput> second = harness::RunTool(
      {testing::UnwinddBinary(), absl::StrCat("--listen=", first->address())},
      absl::Seconds(10));
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->exit_code, 1);
  EXPECT_NE(second->stderr_text.find("another server is listening"), std::string::npos)
      << second->stderr_text;
  EXPECT_TRUE(first->Serving());
}

}  // namespace
}  // namespace unwindd::service
