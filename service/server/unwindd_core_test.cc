// UnwindCore against the real unwindd: a gcore of a parked fixture, given by
// server path or streamed in chunks, must unwind to the frames UnwindProcess
// finds on the same, still parked, process; and the streaming limits hold.
#include <unistd.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "service/server/testing/server_fixture.h"
#include "testdata/harness/subprocess.h"
#include "testdata/harness/tools.h"

namespace unwindd::service {
namespace {

using testing::ServerProcess;
using testing::TempDir;

using FrameKey = std::tuple<uint64_t, uint64_t, int, uint64_t>;

std::vector<FrameKey> Keys(const v1::ThreadStack& t) {
  std::vector<FrameKey> out;
  for (const v1::Frame& f : t.frames()) {
    out.emplace_back(f.pc(), f.sp(), f.method(), f.rel_pc());
  }
  return out;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class CoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (ptraces fixtures)";
    if (access("/usr/bin/gcore", X_OK) != 0) GTEST_SKIP() << "needs gdb's gcore";
    absl::StatusOr<std::unique_ptr<ServerProcess>> s =
        ServerProcess::Start(dir_.path(), {"--max-core-bytes=268435456"});
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = *std::move(s);
    absl::StatusOr<harness::RunningProgram> p =
        harness::StartProgram(harness::FixturePath("threads_c_O2_nofp_pie"));
    ASSERT_TRUE(p.ok()) << p.status();
    program_ = std::make_unique<harness::RunningProgram>(std::move(*p));
    v1::UnwindProcessRequest req;
    req.set_pid(program_->pid());
    grpc::ClientContext c;
    grpc::Status st = server_->Stub()->UnwindProcess(&c, req, &live_);
    ASSERT_TRUE(st.ok()) << st.error_message();
    // The process stays parked, so its core has the same stacks.
    absl::StatusOr<harness::ToolOutput> g = harness::RunTool(
        {"gcore", "-o", dir_.path() + "/core", absl::StrCat(program_->pid())},
        absl::Seconds(60));
    ASSERT_TRUE(g.ok()) << g.status();
    core_ = absl::StrCat(dir_.path(), "/core.", program_->pid());
    ASSERT_EQ(access(core_.c_str(), R_OK), 0) << g->stderr_text;
  }

  grpc::Status Unwind(const std::vector<v1::UnwindCoreRequest>& messages,
                      v1::UnwindResponse* out) {
    auto stub = server_->Stub();
    grpc::ClientContext c;
    auto writer = stub->UnwindCore(&c, out);
    for (const v1::UnwindCoreRequest& m : messages) {
      if (!writer->Write(m)) break;
    }
    writer->WritesDone();
    return writer->Finish();
  }

  void ExpectLikeLive(const v1::UnwindResponse& got) {
    EXPECT_EQ(got.pid(), live_.pid());
    ASSERT_EQ(got.threads_size(), live_.threads_size());
    for (int i = 0; i < got.threads_size(); ++i) {
      EXPECT_EQ(got.threads(i).tid(), live_.threads(i).tid());
      EXPECT_EQ(Keys(got.threads(i)), Keys(live_.threads(i)))
          << "thread " << got.threads(i).tid() << ": " << got.threads(i).stop_detail();
      EXPECT_EQ(got.threads(i).stop(), live_.threads(i).stop());
    }
    EXPECT_FALSE(got.core().executable().empty());
    EXPECT_GT(got.core().files_size(), 0);
    for (const v1::CoreFile& f : got.core().files()) {
      EXPECT_EQ(f.state(), v1::CORE_FILE_STATE_FOUND) << f.path();
    }
  }

  TempDir dir_;
  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<harness::RunningProgram> program_;
  v1::UnwindResponse live_;
  std::string core_;
};

TEST_F(CoreTest, ServerPathUnwindsLikeTheLiveProcess) {
  v1::UnwindCoreRequest r;
  r.mutable_options()->set_server_path(core_);
  v1::UnwindResponse got;
  grpc::Status s = Unwind({r}, &got);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ExpectLikeLive(got);
  EXPECT_EQ(got.core().file(), core_);
}

TEST_F(CoreTest, StreamedCoreUnwindsLikeTheLiveProcess) {
  std::string bytes = ReadFile(core_);
  ASSERT_FALSE(bytes.empty());
  std::vector<v1::UnwindCoreRequest> messages(1);
  messages[0].mutable_options()->set_streamed_size(bytes.size());
  constexpr size_t kChunk = 1 << 20;
  for (size_t at = 0; at < bytes.size(); at += kChunk) {
    v1::UnwindCoreRequest c;
    c.set_chunk(bytes.substr(at, kChunk));
    messages.push_back(std::move(c));
  }
  v1::UnwindResponse got;
  grpc::Status s = Unwind(messages, &got);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ExpectLikeLive(got);
  EXPECT_EQ(got.core().file(), "");
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

// `unwind --server core` prints what `unwind core` prints: over the Unix
// socket the server opens the core by path, over TCP it is streamed.
TEST_F(CoreTest, CliServerFlagPrintsWhatUnwindCorePrints) {
  std::string local_json = Cli({"core", core_, "--format=json"});
  std::string local_text = Cli({"core", core_});
  ASSERT_NE(local_json.find("\"core\""), std::string::npos) << local_json;
  std::string unix_server = absl::StrCat("--server=", server_->address());
  EXPECT_EQ(Cli({unix_server, "core", core_, "--format=json"}), local_json);
  EXPECT_EQ(Cli({"core", core_, unix_server}), local_text);
  EXPECT_EQ(Cli({"core", core_, "--sources=eh_frame", unix_server, "--format=json"}),
            Cli({"core", core_, "--sources=eh_frame", "--format=json"}));

  TempDir tcp_dir;
  absl::StatusOr<std::unique_ptr<ServerProcess>> tcp = ServerProcess::Start(
      tcp_dir.path(), {"--listen=tcp:127.0.0.1:0", "--allow-tcp-unwind-any"});
  ASSERT_TRUE(tcp.ok()) << tcp.status();
  std::string tcp_server = absl::StrCat("--server=tcp:127.0.0.1:", (*tcp)->TcpPort());
  EXPECT_EQ(Cli({tcp_server, "core", core_, "--format=json"}), local_json);
}

TEST_F(CoreTest, StreamLimitsAndMalformedStreams) {
  v1::UnwindResponse got;
  v1::UnwindCoreRequest too_big;
  too_big.mutable_options()->set_streamed_size(uint64_t{1} << 40);
  EXPECT_EQ(Unwind({too_big}, &got).error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);

  v1::UnwindCoreRequest announce;
  announce.mutable_options()->set_streamed_size(10);
  v1::UnwindCoreRequest chunk;
  chunk.set_chunk("0123456789abc");
  EXPECT_EQ(Unwind({announce, chunk}, &got).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);  // more than announced
  chunk.set_chunk("0123");
  EXPECT_EQ(Unwind({announce, chunk}, &got).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);  // fewer
  EXPECT_EQ(Unwind({chunk}, &got).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);  // no options first
  v1::UnwindCoreRequest neither;
  neither.mutable_options()->set_sysroot("/");
  EXPECT_EQ(Unwind({neither}, &got).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  // Ten bytes that are not a core.
  chunk.set_chunk("0123456789");
  EXPECT_EQ(Unwind({announce, chunk}, &got).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  v1::UnwindCoreRequest missing;
  missing.mutable_options()->set_server_path(dir_.path() + "/no-such-core");
  EXPECT_EQ(Unwind({missing}, &got).error_code(), grpc::StatusCode::NOT_FOUND);
}

}  // namespace
}  // namespace unwindd::service
