// UnwindCore with minidumps (issue 29): a minidump written by `unwind core
// --minidump` from a gcore of a parked fixture, given by server path or
// streamed, unwinds to the frames UnwindProcess found on the same parked
// process; the response says it was a minidump, carries the crash
// signature the core itself gets, and each module's ELF package note.
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
  for (const v1::Frame& f : t.frames()) out.emplace_back(f.pc(), f.sp(), f.method(), f.rel_pc());
  return out;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class MinidumpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (ptraces fixtures)";
    if (access("/usr/bin/gcore", X_OK) != 0) GTEST_SKIP() << "needs gdb's gcore";
    absl::StatusOr<std::unique_ptr<ServerProcess>> s = ServerProcess::Start(dir_.path(), {});
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = *std::move(s);
  }

  // Parks `fixture`, unwinds it live, gcores it and writes the minidump.
  void Prepare(const std::string& fixture) {
    absl::StatusOr<harness::RunningProgram> p = harness::StartProgram(fixture);
    ASSERT_TRUE(p.ok()) << p.status();
    program_ = std::make_unique<harness::RunningProgram>(std::move(*p));
    v1::UnwindProcessRequest req;
    req.set_pid(program_->pid());
    grpc::ClientContext c;
    grpc::Status st = server_->Stub()->UnwindProcess(&c, req, &live_);
    ASSERT_TRUE(st.ok()) << st.error_message();
    absl::StatusOr<harness::ToolOutput> g = harness::RunTool(
        {"gcore", "-o", dir_.path() + "/core", absl::StrCat(program_->pid())}, absl::Seconds(60));
    ASSERT_TRUE(g.ok()) << g.status();
    core_ = absl::StrCat(dir_.path(), "/core.", program_->pid());
    minidump_ = dir_.path() + "/core.dmp";
    absl::StatusOr<harness::ToolOutput> w = harness::RunTool(
        {harness::RunfilesRoot() + "/service/unwind", "core", core_, "--minidump=" + minidump_},
        absl::Seconds(60));
    ASSERT_TRUE(w.ok()) << w.status();
    ASSERT_EQ(w->exit_code, 0) << w->stderr_text;
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

  grpc::Status UnwindPath(const std::string& path, v1::UnwindResponse* out) {
    v1::UnwindCoreRequest r;
    r.mutable_options()->set_server_path(path);
    return Unwind({r}, out);
  }

  TempDir dir_;
  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<harness::RunningProgram> program_;
  v1::UnwindResponse live_;
  std::string core_, minidump_;
};

TEST_F(MinidumpTest, ServerPathAndStreamedMinidumpsUnwindLikeTheLiveProcess) {
  Prepare(harness::FixturePath("threads_c_O2_nofp_pie"));
  v1::UnwindResponse from_core;
  grpc::Status s = UnwindPath(core_, &from_core);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(from_core.core().format(), "core");

  v1::UnwindResponse by_path;
  s = UnwindPath(minidump_, &by_path);
  ASSERT_TRUE(s.ok()) << s.error_message();
  std::vector<v1::UnwindCoreRequest> streamed(1);
  const std::string bytes = ReadFile(minidump_);
  streamed[0].mutable_options()->set_streamed_size(bytes.size());
  streamed.emplace_back().set_chunk(bytes);
  v1::UnwindResponse by_stream;
  s = Unwind(streamed, &by_stream);
  ASSERT_TRUE(s.ok()) << s.error_message();

  for (const v1::UnwindResponse* got : {&by_path, &by_stream}) {
    EXPECT_EQ(got->core().format(), "minidump");
    EXPECT_EQ(got->pid(), live_.pid());
    ASSERT_EQ(got->threads_size(), live_.threads_size());
    for (int i = 0; i < got->threads_size(); ++i) {
      EXPECT_EQ(got->threads(i).tid(), live_.threads(i).tid());
      EXPECT_EQ(Keys(got->threads(i)), Keys(live_.threads(i)))
          << "thread " << got->threads(i).tid() << ": " << got->threads(i).stop_detail();
    }
    for (const v1::CoreFile& f : got->core().files()) {
      EXPECT_EQ(f.state(), v1::CORE_FILE_STATE_FOUND) << f.path();
    }
    // The same signature as the core's, and the minidump's own facts.
    EXPECT_EQ(got->signature().duphash().size(), 40u);
    EXPECT_EQ(got->signature().duphash(), from_core.signature().duphash());
    EXPECT_EQ(got->signature().frames_size(), 3);
    bool has_pid = false;
    for (const v1::CoreFact& f : got->core().metadata()) has_pid |= f.key() == "pid";
    EXPECT_TRUE(has_pid);
  }
}

TEST_F(MinidumpTest, ModulesCarryTheirPackageNotes) {
  Prepare(harness::RunfilesRoot() + "/testdata/coredump/crasher");
  v1::UnwindResponse got;
  grpc::Status s = UnwindPath(minidump_, &got);
  ASSERT_TRUE(s.ok()) << s.error_message();
  int packaged = 0;
  for (const v1::Module& m : got.modules()) {
    if (!m.has_package()) continue;
    ++packaged;
    EXPECT_EQ(m.package().name(), "unwindd-crasher");
    EXPECT_EQ(m.package().version(), "1.2-3");
    EXPECT_EQ(m.package().os_cpe(), "cpe:/o:debian:debian_linux:12");
    EXPECT_EQ(m.package().fields().at("osVersion"), "12");
  }
  EXPECT_EQ(packaged, 1);
}

TEST_F(MinidumpTest, ABrokenMinidumpIsDataLoss) {
  const std::string bad = dir_.path() + "/bad.dmp";
  std::ofstream(bad, std::ios::binary) << std::string("MDMP\x93\xa7\0\0", 8) << std::string(24, '\xff');
  v1::UnwindResponse got;
  grpc::Status s = UnwindPath(bad, &got);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::DATA_LOSS) << s.error_message();
}

}  // namespace
}  // namespace unwindd::service
