// UnwindSnapshots against the real unwindd: samples captured from parked
// fixture processes (registers + stack copy, as perf gives them) must unwind
// to the frames UnwindProcess finds on the live process — from the stack
// copy and module files alone, from /proc when only the pid is given, with
// perf's register numbering, and by build-id when the paths are wrong.
#include <unistd.h>

#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "service/server/testing/capture.h"
#include "service/server/testing/server_fixture.h"
#include "testdata/harness/subprocess.h"
#include "testdata/harness/tools.h"

namespace unwindd::service {
namespace {

using testing::CaptureOptions;
using testing::ServerProcess;
using testing::TempDir;

// pc, sp, method, rel_pc and whether a module was found, per frame.
using FrameKey = std::tuple<uint64_t, uint64_t, int, uint64_t, bool>;

std::vector<FrameKey> Keys(const v1::ThreadStack& t) {
  std::vector<FrameKey> out;
  for (const v1::Frame& f : t.frames()) {
    out.emplace_back(f.pc(), f.sp(), f.method(), f.rel_pc(), f.has_module());
  }
  return out;
}

class SnapshotTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (captures ptrace fixtures)";
    absl::StatusOr<std::unique_ptr<ServerProcess>> s =
        ServerProcess::Start(dir_.path(), {"--max-stack-bytes=524288"});
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = *std::move(s);
  }

  // Starts `fixture` and records UnwindProcess's view of it.
  void StartFixture(const std::string& fixture) {
    absl::StatusOr<harness::RunningProgram> p =
        harness::StartProgram(harness::FixturePath(fixture));
    ASSERT_TRUE(p.ok()) << p.status();
    program_ = std::make_unique<harness::RunningProgram>(std::move(*p));
    v1::UnwindProcessRequest req;
    req.set_pid(program_->pid());
    grpc::ClientContext c;
    grpc::Status s = server_->Stub()->UnwindProcess(&c, req, &want_);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }

  std::vector<v1::SnapshotRequest> Capture(const CaptureOptions& o) {
    absl::StatusOr<std::vector<v1::SnapshotRequest>> s =
        testing::CaptureSamples(program_->pid(), o);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? *s : std::vector<v1::SnapshotRequest>{};
  }

  // Sends `samples` on one stream; the responses in order.
  std::vector<v1::SnapshotResponse> Stream(const std::vector<v1::SnapshotRequest>& samples,
                                           grpc::Status* status = nullptr) {
    auto stub = server_->Stub();
    grpc::ClientContext c;
    auto stream = stub->UnwindSnapshots(&c);
    std::vector<v1::SnapshotResponse> out;
    for (const v1::SnapshotRequest& r : samples) {
      if (!stream->Write(r)) break;
      v1::SnapshotResponse resp;
      if (!stream->Read(&resp)) break;
      out.push_back(std::move(resp));
    }
    stream->WritesDone();
    grpc::Status s = stream->Finish();
    if (status != nullptr) *status = s;
    else EXPECT_TRUE(s.ok()) << s.error_message();
    return out;
  }

  // Sends `samples` on one UnwindSnapshotBatches stream, `per_batch` to a
  // message; the responses in order, flattened.
  std::vector<v1::SnapshotResponse> StreamBatches(
      const std::vector<v1::SnapshotRequest>& samples, int per_batch) {
    auto stub = server_->Stub();
    grpc::ClientContext c;
    auto stream = stub->UnwindSnapshotBatches(&c);
    std::vector<v1::SnapshotResponse> out;
    for (size_t i = 0; i < samples.size(); i += per_batch) {
      v1::SnapshotBatch batch;
      for (size_t k = i; k < std::min(samples.size(), i + per_batch); ++k) {
        *batch.add_samples() = samples[k];
      }
      if (!stream->Write(batch)) break;
      v1::SnapshotBatchResponse resp;
      if (!stream->Read(&resp)) break;
      EXPECT_EQ(resp.responses_size(), batch.samples_size());
      for (v1::SnapshotResponse& r : *resp.mutable_responses()) out.push_back(std::move(r));
    }
    stream->WritesDone();
    grpc::Status s = stream->Finish();
    EXPECT_TRUE(s.ok()) << s.error_message();
    return out;
  }

  // Every response matches UnwindProcess's frames for its thread.
  void ExpectLikeLive(const std::vector<v1::SnapshotRequest>& samples,
                      const std::vector<v1::SnapshotResponse>& got) {
    ASSERT_EQ(got.size(), samples.size());
    ASSERT_EQ(static_cast<int>(got.size()), want_.threads_size());
    for (size_t i = 0; i < got.size(); ++i) {
      const v1::SnapshotResponse& r = got[i];
      EXPECT_EQ(r.sample_id(), samples[i].sample_id());
      ASSERT_FALSE(r.has_error()) << r.error().message();
      const v1::ThreadStack& w = want_.threads(i);
      EXPECT_EQ(r.stack().tid(), w.tid());
      EXPECT_EQ(Keys(r.stack()), Keys(w)) << "thread " << w.tid() << ": "
                                          << r.stack().stop_detail();
      EXPECT_EQ(r.stack().stop(), w.stop()) << r.stack().stop_detail();
      for (const v1::Frame& f : r.stack().frames()) {
        if (!f.has_module()) continue;
        ASSERT_LT(f.module(), static_cast<uint32_t>(r.modules_size()));
        EXPECT_FALSE(r.modules(f.module()).build_id().empty());
      }
    }
  }

  TempDir dir_;
  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<harness::RunningProgram> program_;
  v1::UnwindResponse want_;
};

TEST_F(SnapshotTest, StackCopyAndModuleFilesAloneGiveTheLiveFrames) {
  StartFixture("threads_c_O2_nofp_pie");
  CaptureOptions o;
  o.with_pid = false;  // no process memory: the copy and the files only
  std::vector<v1::SnapshotRequest> samples = Capture(o);
  ExpectLikeLive(samples, Stream(samples));
}

TEST_F(SnapshotTest, PidOnlyReadsMappingsAndMemoryFromTheProcess) {
  StartFixture("signal_handler_O2_nofp_pie");
  CaptureOptions o;
  o.mappings = CaptureOptions::Mappings::kNone;
  o.max_stack = 512;  // the rest of each stack comes from the live process
  std::vector<v1::SnapshotRequest> samples = Capture(o);
  ExpectLikeLive(samples, Stream(samples));
}

TEST_F(SnapshotTest, PerfRegisterNumbering) {
  StartFixture("cxx_catch_O2_nofp_pie");
  CaptureOptions o;
  o.mappings = CaptureOptions::Mappings::kPaths;
  o.perf_registers = true;
  std::vector<v1::SnapshotRequest> samples = Capture(o);
  ExpectLikeLive(samples, Stream(samples));
}

// Build-ids verified on one stream find the files for another stream whose
// paths are wrong (a profile from another host layout); a wrong build-id
// keeps the right path from being used.
TEST_F(SnapshotTest, BuildIdsFindFilesAcrossStreamsAndRejectOtherBuilds) {
  StartFixture("threads_c_O2_nofp_pie");
  CaptureOptions o;
  o.with_pid = false;
  std::vector<v1::SnapshotRequest> samples = Capture(o);
  ExpectLikeLive(samples, Stream(samples));

  std::vector<v1::SnapshotRequest> moved = samples;
  for (v1::SnapshotRequest& r : moved) {
    for (v1::Mapping& m : *r.mutable_mappings()) {
      if (!m.build_id().empty()) m.set_path("/nonexistent" + m.path());
    }
  }
  ExpectLikeLive(moved, Stream(moved));

  std::vector<v1::SnapshotRequest> wrong = samples;
  for (v1::SnapshotRequest& r : wrong) {
    for (v1::Mapping& m : *r.mutable_mappings()) {
      if (!m.build_id().empty()) m.set_build_id(std::string(40, 'a'));
    }
  }
  // The files are never used for unwind info or memory: modules carry the
  // sample's build-id and say why there is no file (the step loop may still
  // follow frame pointers through the stack copy).
  for (const v1::SnapshotResponse& r : Stream(wrong)) {
    ASSERT_FALSE(r.has_error());
    ASSERT_GT(r.modules_size(), 0);
    for (const v1::Module& m : r.modules()) {
      EXPECT_EQ(m.build_id(), std::string(40, 'a')) << m.path();
      EXPECT_FALSE(m.error().empty()) << m.path();
      EXPECT_EQ(m.file(), "");
    }
    for (const v1::Frame& f : r.stack().frames()) {
      EXPECT_NE(f.method(), v1::METHOD_EH_FRAME);
    }
  }
  grpc::ClientContext c;
  v1::Stats stats;
  ASSERT_TRUE(server_->Stub()->GetStats(&c, v1::GetStatsRequest(), &stats).ok());
  EXPECT_EQ(stats.snapshot_streams(), 3u);
  EXPECT_GT(stats.module_cache_hits(), 0u);
}

// A later sample without mappings reuses the stream's last table.
TEST_F(SnapshotTest, LaterSamplesMayOmitTheMappings) {
  StartFixture("threads_c_O2_nofp_pie");
  CaptureOptions o;
  o.mappings = CaptureOptions::Mappings::kPaths;
  std::vector<v1::SnapshotRequest> samples = Capture(o);
  for (size_t i = 1; i < samples.size(); ++i) samples[i].clear_mappings();
  ExpectLikeLive(samples, Stream(samples));
}

TEST_F(SnapshotTest, BadSamplesGetErrorsAndTheStreamGoesOn) {
  StartFixture("threads_c_O2_nofp_pie");
  std::vector<v1::SnapshotRequest> good = Capture({});
  ASSERT_FALSE(good.empty());
  v1::SnapshotRequest no_regs = good[0];
  no_regs.set_sample_id(100);
  no_regs.clear_dwarf_registers();
  v1::SnapshotRequest huge = good[0];
  huge.set_sample_id(101);
  huge.mutable_stack()->resize(600 << 10);
  v1::SnapshotRequest no_arch = good[0];
  no_arch.set_sample_id(102);
  no_arch.set_arch(v1::ARCH_UNSPECIFIED);
  v1::SnapshotRequest overlap = good[0];
  overlap.set_sample_id(103);
  *overlap.add_mappings() = overlap.mappings(0);
  v1::SnapshotRequest nothing = good[0];
  nothing.set_sample_id(104);
  nothing.clear_mappings();
  nothing.set_pid(0);
  std::vector<v1::SnapshotResponse> got =
      Stream({no_regs, huge, no_arch, overlap, nothing, good[0]});
  ASSERT_EQ(got.size(), 6u);
  EXPECT_EQ(got[0].error().code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(got[1].error().code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(got[2].error().code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(got[3].error().code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(got[4].error().code(), grpc::StatusCode::INVALID_ARGUMENT);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(got[i].sample_id(), 100u + i);
  EXPECT_FALSE(got[5].has_error()) << got[5].error().message();
  EXPECT_EQ(Keys(got[5].stack()), Keys(want_.threads(0)));
}

// The same samples in batches (one message, or several of two) give the
// same answers as one sample per message, errors included, in order.
TEST_F(SnapshotTest, BatchesAnswerSampleForSample) {
  StartFixture("threads_c_O2_nofp_pie");
  std::vector<v1::SnapshotRequest> samples = Capture({});
  ExpectLikeLive(samples, StreamBatches(samples, samples.size()));
  ExpectLikeLive(samples, StreamBatches(samples, 2));

  v1::SnapshotRequest no_regs = samples[0];
  no_regs.set_sample_id(100);
  no_regs.clear_dwarf_registers();
  std::vector<v1::SnapshotResponse> got =
      StreamBatches({samples[0], no_regs, samples[1]}, 3);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_FALSE(got[0].has_error()) << got[0].error().message();
  EXPECT_EQ(got[1].sample_id(), 100u);
  EXPECT_EQ(got[1].error().code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_FALSE(got[2].has_error()) << got[2].error().message();
  EXPECT_EQ(Keys(got[2].stack()), Keys(want_.threads(1)));
}

TEST(SnapshotLimitsTest, BatchesCountAgainstTheStreamAndHaveAMaximumSize) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root";
  TempDir dir;
  absl::StatusOr<std::unique_ptr<ServerProcess>> s =
      ServerProcess::Start(dir.path(), {"--max-samples-per-stream=3"});
  ASSERT_TRUE(s.ok()) << s.status();
  auto stub = (*s)->Stub();
  {
    grpc::ClientContext c;
    auto stream = stub->UnwindSnapshotBatches(&c);
    v1::SnapshotBatch batch;
    batch.add_samples();  // invalid, but still samples
    batch.add_samples();
    v1::SnapshotBatchResponse resp;
    ASSERT_TRUE(stream->Write(batch));
    ASSERT_TRUE(stream->Read(&resp));
    EXPECT_EQ(resp.responses_size(), 2);
    stream->Write(batch);  // samples 3 and 4: over the limit of 3
    EXPECT_FALSE(stream->Read(&resp));
    stream->WritesDone();
    EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  }
  {
    grpc::ClientContext c;
    auto stream = stub->UnwindSnapshotBatches(&c);
    v1::SnapshotBatch batch;
    for (int i = 0; i < 1025; ++i) batch.add_samples();
    stream->Write(batch);
    v1::SnapshotBatchResponse resp;
    EXPECT_FALSE(stream->Read(&resp));
    stream->WritesDone();
    EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  }
}

TEST(SnapshotLimitsTest, StreamLengthIsBounded) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root";
  TempDir dir;
  absl::StatusOr<std::unique_ptr<ServerProcess>> s =
      ServerProcess::Start(dir.path(), {"--max-samples-per-stream=2"});
  ASSERT_TRUE(s.ok()) << s.status();
  auto stub = (*s)->Stub();
  grpc::ClientContext c;
  auto stream = stub->UnwindSnapshots(&c);
  v1::SnapshotRequest r;  // invalid, but still a sample
  int answered = 0;
  for (int i = 0; i < 3; ++i) {
    if (!stream->Write(r)) break;
    v1::SnapshotResponse resp;
    if (stream->Read(&resp)) ++answered;
  }
  stream->WritesDone();
  EXPECT_EQ(answered, 2);
  EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
}

}  // namespace
}  // namespace unwindd::service
