// unwind --server's channel (channel.h) against three real unwindd
// replicas on 127.0.0.1, 127.0.0.2 and 127.0.0.3 (one port): calls spread
// over all three, none fails while one of them drains, and the CLI through
// ipv4: and dns:/// targets prints what the in-process CLI prints.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "proto/unwinder.grpc.pb.h"
#include "service/remote/channel.h"
#include "service/server/testing/server_fixture.h"
#include "testdata/harness/subprocess.h"
#include "testdata/harness/tools.h"

namespace unwindd::service {
namespace {

using testing::ServerProcess;
using testing::TempDir;

std::string Fixture(const std::string& name) {
  return harness::FixturePath("aarch64/" + name);
}

// The fixture executable where a TCP caller's identity can read it: the
// server opens --exe as the caller (nobody, over TCP), and Bazel's output
// base may sit under a home directory nobody can enter.
std::string ReadableExe() {
  static const std::string path = [] {
    char dir[] = "/tmp/unwindd-channel-XXXXXX";
    if (mkdtemp(dir) == nullptr) return Fixture("threads_O2_nofp");
    chmod(dir, 0755);
    const std::string out = std::string(dir) + "/threads_O2_nofp";
    std::filesystem::copy_file(Fixture("threads_O2_nofp"), out);
    chmod(out.c_str(), 0644);
    return out;
  }();
  return path;
}

// The service config carries call_policy.h's numbers, as gRPC reads them
// (the socket client retries with the same ones: unix_call_test).
TEST(RemoteServiceConfigTest, RetriesAsTheCallPolicySays) {
  const std::string config = RemoteServiceConfig();
  for (const char* want : {"\"maxAttempts\": 5,", "\"initialBackoff\": \"0.1s\",",
                           "\"maxBackoff\": \"1s\",", "\"backoffMultiplier\": 2,",
                           "\"retryableStatusCodes\": [\"UNAVAILABLE\"]",
                           "\"loadBalancingConfig\": [{\"round_robin\": {}}]"}) {
    EXPECT_NE(config.find(want), std::string::npos) << want << " in " << config;
  }
}

TEST(RemoteTargetTest, TakesGrpcSchemesAndTcp) {
  EXPECT_EQ(*RemoteTarget("dns:///unwindd:7070"), "dns:///unwindd:7070");
  EXPECT_EQ(*RemoteTarget("ipv4:127.0.0.1:1,127.0.0.2:1"), "ipv4:127.0.0.1:1,127.0.0.2:1");
  EXPECT_EQ(*RemoteTarget("unix:/run/unwindd.sock"), "unix:/run/unwindd.sock");
  EXPECT_EQ(*RemoteTarget("tcp:host:7070"), "host:7070");
  for (const char* bad : {"", "tcp:nocolon", "dns:", "http://x", "host:1"}) {
    EXPECT_FALSE(RemoteTarget(bad).ok()) << bad;
  }
}

// Under --config=asan, LeakSanitizer in the CLIs this test runs reports
// the 10 bytes Debian's c-ares (gRPC's dns:/// resolver, not instrumented,
// not ours) still holds at exit: suppressed for this test's children only.
void SuppressCaresLeakInChildren() {
  const std::string supp = ::testing::TempDir() + "/lsan_cares.supp";
  std::ofstream(supp) << "leak:libcares.so\n";
  const char* old = getenv("LSAN_OPTIONS");
  setenv("LSAN_OPTIONS",
         absl::StrCat(old != nullptr ? old : "", old != nullptr ? ":" : "", "suppressions=", supp)
             .c_str(),
         1);
}

class ReplicasTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (as the server fixture)";
    SuppressCaresLeakInChildren();
    core_ = testing::ReadFile(Fixture("threads_O2_nofp.core.xz"));
    ASSERT_GT(core_.size(), 1000u);
    for (int i = 0; i < 3; ++i) {
      const std::string host = absl::StrCat("127.0.0.", i + 1);
      absl::StatusOr<std::unique_ptr<ServerProcess>> s = ServerProcess::Start(
          dirs_[i].path(),
          {absl::StrCat("--listen=tcp:", host, ":", port_), "--drain-timeout=10"});
      ASSERT_TRUE(s.ok()) << s.status();
      servers_.push_back(*std::move(s));
      // Printed just after the health service starts answering.
      for (int t = 0; i == 0 && t < 500 && (port_ = servers_[0]->TcpPort()) == 0; ++t) {
        absl::SleepFor(absl::Milliseconds(10));
      }
      ASSERT_GT(port_, 0) << servers_[0]->Stderr();
    }
    target_ = absl::StrCat("ipv4:127.0.0.1:", port_, ",127.0.0.2:", port_,
                           ",127.0.0.3:", port_);
  }

  grpc::Status UnwindCore(v1::Unwinder::Stub& stub, v1::UnwindResponse* out) {
    grpc::ClientContext c;
    c.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    auto w = stub.UnwindCore(&c, out);
    v1::UnwindCoreRequest m;
    m.mutable_options()->set_streamed_size(core_.size());
    m.mutable_options()->set_exe(ReadableExe());
    w->Write(m);
    v1::UnwindCoreRequest chunk;
    chunk.set_chunk(core_);
    w->Write(chunk);
    w->WritesDone();
    return w->Finish();
  }

  uint64_t CoreRequests(int i) {
    v1::Stats stats;
    grpc::ClientContext c;
    if (!servers_[i]->Stub()->GetStats(&c, v1::GetStatsRequest(), &stats).ok()) return 0;
    return stats.core_requests();
  }

  TempDir dirs_[3];
  int port_ = 0;
  std::vector<std::unique_ptr<ServerProcess>> servers_;
  std::string target_;
  std::string core_;
};

TEST_F(ReplicasTest, CallsSpreadOverEveryReplicaAndSurviveADrain) {
  auto channel = grpc::CreateCustomChannel(target_, grpc::InsecureChannelCredentials(),
                                           RemoteChannelArguments());
  auto stub = v1::Unwinder::NewStub(channel);
  v1::UnwindResponse first;
  ASSERT_TRUE(UnwindCore(*stub, &first).ok());
  ASSERT_GT(first.threads_size(), 0);
  for (int i = 0; i < 29; ++i) {
    v1::UnwindResponse r;
    grpc::Status st = UnwindCore(*stub, &r);
    ASSERT_TRUE(st.ok()) << st.error_message();
    EXPECT_EQ(r.SerializeAsString(), first.SerializeAsString());
  }
  // A client with the default pick_first sends all 30 to one replica;
  // round_robin about 10 to each.
  uint64_t total = 0;
  for (int i = 0; i < 3; ++i) {
    EXPECT_GE(CoreRequests(i), 5u) << "replica " << i;
    total += CoreRequests(i);
  }
  EXPECT_EQ(total, 30u);

  // Four clients call without pause while replica 1 drains and exits:
  // every call answers, as before.
  std::atomic<bool> stop{false};
  std::atomic<int> ok{0}, failed{0};
  absl::Mutex mu;
  std::string failure;
  std::vector<std::thread> clients;
  for (int t = 0; t < 4; ++t) {
    clients.emplace_back([&] {
      while (!stop.load()) {
        v1::UnwindResponse r;
        grpc::Status st = UnwindCore(*stub, &r);
        if (st.ok() && r.SerializeAsString() == first.SerializeAsString()) {
          ++ok;
        } else {
          ++failed;
          absl::MutexLock l(&mu);
          failure = st.error_message();
        }
      }
    });
  }
  absl::SleepFor(absl::Milliseconds(500));
  const uint64_t before_drain = CoreRequests(0) + CoreRequests(2);
  EXPECT_EQ(servers_[1]->Terminate(), 0) << servers_[1]->Stderr();
  absl::SleepFor(absl::Milliseconds(1000));
  stop.store(true);
  for (std::thread& t : clients) t.join();
  EXPECT_EQ(failed.load(), 0) << failure;
  EXPECT_GT(ok.load(), 20);
  // The two left took the calls after the drain.
  EXPECT_GT(CoreRequests(0) + CoreRequests(2), before_drain + 4);
}

TEST_F(ReplicasTest, CliThroughIpv4AndDnsTargetsPrintsWhatTheLocalCliPrints) {
  const std::string core_path = Fixture("threads_O2_nofp.core.xz");
  const std::string exe = ReadableExe();
  const std::string unwind = testing::ServiceBinary("unwind");
  absl::StatusOr<harness::ToolOutput> local = harness::RunTool(
      {unwind, "core", core_path, "--exe=" + exe, "--format=json"}, absl::Seconds(60));
  ASSERT_TRUE(local.ok()) << local.status();
  ASSERT_EQ(local->exit_code, 0) << local->stderr_text;
  for (const std::string& server :
       {target_, absl::StrCat("dns:///localhost:", port_)}) {
    absl::StatusOr<harness::ToolOutput> remote = harness::RunTool(
        {unwind, "--server=" + server, "core", core_path, "--exe=" + exe, "--format=json"},
        absl::Seconds(60));
    ASSERT_TRUE(remote.ok()) << remote.status();
    EXPECT_EQ(remote->exit_code, 0) << server << ": " << remote->stderr_text;
    EXPECT_EQ(remote->stdout_text, local->stdout_text) << server;
  }
  // A replica gone (SIGKILL): its address refuses connections, and the
  // CLI's calls go to the others.
  ASSERT_EQ(kill(servers_[0]->pid(), SIGKILL), 0);
  absl::SleepFor(absl::Milliseconds(200));
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<harness::ToolOutput> remote = harness::RunTool(
        {unwind, "--server=" + target_, "core", core_path, "--exe=" + exe, "--format=json"},
        absl::Seconds(60));
    ASSERT_TRUE(remote.ok());
    EXPECT_EQ(remote->exit_code, 0) << remote->stderr_text;
    EXPECT_EQ(remote->stdout_text, local->stdout_text);
  }
}

}  // namespace
}  // namespace unwindd::service
