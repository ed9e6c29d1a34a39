// unwindd with binaries from elsewhere (docs/cores.md "Binaries from elsewhere"):
// a program stripped of its CFI (split debug file beside it) unwound live;
// then, with the program and its debug file gone from this machine and only
// on a debuginfod server, the samples captured from it (UnwindSnapshots)
// and its gcore (UnwindCore) give the same frames, from fetched files. And
// debuginfod stays off unless unwindd was started with it.
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "service/server/testing/capture.h"
#include "service/server/testing/server_fixture.h"
#include "testdata/debuginfo/servers.h"
#include "testdata/harness/subprocess.h"
#include "testdata/harness/tools.h"

// Under --config=asan the fixture programs link ASan's runtime, whose
// shadow memory (terabytes of reserved address space) gcore tries to dump:
// it does not finish within the tools' time bound. The core halves of
// these tests run in the normal suite.
#if defined(__SANITIZE_ADDRESS__)
#define UNWINDD_FIXTURES_HAVE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNWINDD_FIXTURES_HAVE_ASAN 1
#endif
#endif

namespace unwindd::service {
namespace {

using debuginfo_testing::DebuginfodServer;
using testing::CaptureOptions;
using testing::ServerProcess;
using testing::TempDir;

constexpr char kProgram[] = "signal_handler_O2_nofp_pie_debugframe";

std::string Variant(const std::string& file) {
  return absl::StrCat(harness::RunfilesRoot(), "/testdata/debuginfo/split/", file);
}

void Copy(const std::string& from, const std::string& to) {
  absl::StatusOr<std::string> b = debuginfo_testing::ReadFile(from);
  ASSERT_TRUE(b.ok()) << b.status();
  ASSERT_TRUE(debuginfo_testing::MakeDirs(to.substr(0, to.rfind('/'))).ok());
  ASSERT_TRUE(debuginfo_testing::WriteFile(to, *b).ok());
}

// tid -> PCs.
std::map<int, std::vector<uint64_t>> Pcs(const v1::UnwindResponse& r) {
  std::map<int, std::vector<uint64_t>> out;
  for (const v1::ThreadStack& t : r.threads()) {
    for (const v1::Frame& f : t.frames()) out[t.tid()].push_back(f.pc());
  }
  return out;
}

const v1::Module* ProgramModule(const google::protobuf::RepeatedPtrField<v1::Module>& ms) {
  for (const v1::Module& m : ms) {
    if (absl::EndsWith(m.path(), std::string("/") + kProgram)) return &m;
  }
  return nullptr;
}

class DebuginfoServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (captures ptrace fixtures)";
    app_ = absl::StrCat(dir_.path(), "/app/", kProgram);
    Copy(Variant(kProgram), app_);
    Copy(Variant(kProgram) + ".debug", app_ + ".debug");
    Copy(Variant(kProgram), absl::StrCat(dir_.path(), "/served/", kProgram));
    Copy(Variant(kProgram) + ".debug", absl::StrCat(dir_.path(), "/served/", kProgram, ".debug"));
    absl::StatusOr<std::unique_ptr<DebuginfodServer>> d =
        DebuginfodServer::Start(dir_.path() + "/served", 2);
    ASSERT_TRUE(d.ok()) << d.status();
    debuginfod_ = *std::move(d);
    // unwindd's own libdebuginfod cache, fresh for the test.
    setenv("DEBUGINFOD_CACHE_PATH", (dir_.path() + "/cache").c_str(), 1);
    ASSERT_TRUE(debuginfo_testing::MakeDirs(dir_.path() + "/unwindd").ok());
    absl::StatusOr<std::unique_ptr<ServerProcess>> s = ServerProcess::Start(
        dir_.path() + "/unwindd",
        {"--max-stack-bytes=524288", "--debug-dir=/nonexistent",
         "--debuginfod=" + debuginfod_->url(), "--debuginfod-timeout=20"});
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = *std::move(s);
  }

  v1::UnwindResponse Core(const std::string& core, bool debuginfod) {
    auto stub = server_->Stub();
    grpc::ClientContext c;
    v1::UnwindResponse resp;
    auto writer = stub->UnwindCore(&c, &resp);
    v1::UnwindCoreRequest first;
    first.mutable_options()->set_server_path(core);
    first.mutable_options()->set_debuginfod(debuginfod);
    EXPECT_TRUE(writer->Write(first));
    writer->WritesDone();
    grpc::Status s = writer->Finish();
    EXPECT_TRUE(s.ok()) << s.error_message();
    return resp;
  }

  TempDir dir_;
  std::string app_;
  std::unique_ptr<DebuginfodServer> debuginfod_;
  std::unique_ptr<ServerProcess> server_;
};

TEST_F(DebuginfoServiceTest, SnapshotsAndCoresWhoseFilesAreOnlyInDebuginfod) {
#ifdef UNWINDD_FIXTURES_HAVE_ASAN
  GTEST_SKIP() << "gcore of a fixture that links ASan's runtime does not finish";
#endif
  v1::UnwindResponse live;
  std::vector<v1::SnapshotRequest> samples;
  std::string core;
  {
    absl::StatusOr<harness::RunningProgram> p = harness::StartProgram(app_);
    ASSERT_TRUE(p.ok()) << p.status();
    v1::UnwindProcessRequest req;
    req.set_pid(p->pid());
    grpc::ClientContext c;
    grpc::Status s = server_->Stub()->UnwindProcess(&c, req, &live);
    ASSERT_TRUE(s.ok()) << s.error_message();
    // Without a pid: the server has only the sample and the files.
    absl::StatusOr<std::vector<v1::SnapshotRequest>> cap = testing::CaptureSamples(
        p->pid(), {.mappings = CaptureOptions::Mappings::kWithBuildIds, .with_pid = false});
    ASSERT_TRUE(cap.ok()) << cap.status();
    samples = *std::move(cap);
    absl::StatusOr<harness::ToolOutput> g = harness::RunTool(
        {"gcore", "-o", dir_.path() + "/core", absl::StrCat(p->pid())}, harness::kToolTimeout);
    ASSERT_TRUE(g.ok() && g->exit_code == 0) << g.status();
    core = absl::StrCat(dir_.path(), "/core.", p->pid());
  }
  // Live, with the files in place: the debug file beside the program.
  const v1::Module* m = ProgramModule(live.modules());
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->debug_kind(), "debug");
  EXPECT_EQ(m->debug_file(), app_ + ".debug");
  EXPECT_FALSE(m->fetched());
  const std::map<int, std::vector<uint64_t>> want = Pcs(live);
  ASSERT_GE(want.size(), 4u);

  auto stream = [&](bool debuginfod) {
    auto stub = server_->Stub();
    grpc::ClientContext c;
    auto st = stub->UnwindSnapshots(&c);
    std::map<int, std::vector<uint64_t>> got;
    std::vector<v1::SnapshotResponse> responses;
    for (v1::SnapshotRequest r : samples) {
      r.set_debuginfod(debuginfod);
      EXPECT_TRUE(st->Write(r));
      v1::SnapshotResponse resp;
      EXPECT_TRUE(st->Read(&resp));
      EXPECT_FALSE(resp.has_error()) << resp.error().message();
      for (const v1::Frame& f : resp.stack().frames()) got[resp.stack().tid()].push_back(f.pc());
      responses.push_back(std::move(resp));
    }
    st->WritesDone();
    EXPECT_TRUE(st->Finish().ok());
    return std::make_pair(got, responses);
  };
  // The samples with the files in place. (Not quite the live frames: the
  // thread on an alternate signal stack has its interrupted stack outside
  // the copy, and without a pid the server cannot read it.)
  const std::map<int, std::vector<uint64_t>> sampled = stream(false).first;
  ASSERT_EQ(sampled.size(), want.size());

  // Now the program and its debug file are only on the debuginfod server.
  ASSERT_EQ(rename((dir_.path() + "/app").c_str(), (dir_.path() + "/gone").c_str()), 0);

  // Without debuginfod the program's frames are lost.
  EXPECT_NE(stream(false).first, sampled);
  auto [got, responses] = stream(true);
  int matched = 0;
  for (const auto& [tid, pcs] : sampled) {
    EXPECT_EQ(got[tid], pcs) << "thread " << tid;
    matched += got[tid] == pcs;
  }
  std::printf("snapshots, files only in debuginfod vs in place: compared %zu threads, %d matched\n",
              sampled.size(), matched);
  int fetched_modules = 0;
  for (const v1::SnapshotResponse& r : responses) {
    const v1::Module* pm = ProgramModule(r.modules());
    if (pm == nullptr) continue;
    ++fetched_modules;
    EXPECT_TRUE(pm->fetched());
    EXPECT_TRUE(absl::StrContains(pm->file(), "/cache/")) << pm->file();
    EXPECT_EQ(pm->debug_kind(), "debug");
    EXPECT_TRUE(pm->debug_fetched());
  }
  EXPECT_GT(fetched_modules, 0);

  // The core, through UnwindCore.
  v1::UnwindResponse from_core = Core(core, true);
  EXPECT_EQ(Pcs(from_core), want);
  const v1::Module* cm = ProgramModule(from_core.modules());
  ASSERT_NE(cm, nullptr);
  EXPECT_TRUE(cm->fetched());
  bool reported = false;
  for (const v1::CoreFile& f : from_core.core().files()) {
    if (absl::EndsWith(f.path(), kProgram)) {
      reported = true;
      EXPECT_EQ(f.state(), v1::CORE_FILE_STATE_FOUND);
      EXPECT_TRUE(f.fetched());
    }
  }
  EXPECT_TRUE(reported);
  std::printf("UnwindCore, files only in debuginfod: compared %zu threads, %d matched\n",
              want.size(), Pcs(from_core) == want ? static_cast<int>(want.size()) : 0);
  EXPECT_NE(Pcs(Core(core, false)), want);
}

TEST(DebuginfoServiceOffTest, OffUnlessConfiguredAndRequestsAreChecked) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root";
  TempDir dir;
  // DEBUGINFOD_URLS in unwindd's environment does not turn it on.
  setenv("DEBUGINFOD_URLS", "http://127.0.0.1:1", 1);
  absl::StatusOr<std::unique_ptr<ServerProcess>> s = ServerProcess::Start(dir.path(), {});
  unsetenv("DEBUGINFOD_URLS");
  ASSERT_TRUE(s.ok()) << s.status();
  auto stub = (*s)->Stub();
  v1::UnwindProcessRequest req;
  req.set_pid(getpid());
  req.set_debuginfod(true);
  v1::UnwindResponse resp;
  {
    grpc::ClientContext c;
    grpc::Status st = stub->UnwindProcess(&c, req, &resp);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << st.error_message();
    EXPECT_TRUE(absl::StrContains(st.error_message(), "--debuginfod"));
  }
  req.set_debuginfod(false);
  req.add_debug_dirs("relative/dir");
  {
    grpc::ClientContext c;
    grpc::Status st = stub->UnwindProcess(&c, req, &resp);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << st.error_message();
  }
  EXPECT_EQ((*s)->Terminate(), 0);
}

}  // namespace
}  // namespace unwindd::service
