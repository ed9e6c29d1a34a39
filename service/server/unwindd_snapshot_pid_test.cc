// A snapshot's pid against the real unwindd: it means "this live process"
// only while the process at that pid is the sampled one. Two copies of one
// fixture run without address-space randomization, so their parked threads
// have the same stacks at the same addresses: a sample of the first,
// wrongly given the second's pid, would unwind in full from the second's
// memory. The samples carry only 256 bytes of stack, so a walk that
// completes must have read the rest from a live process, and one that
// stops early did not.
#include <signal.h>
#include <sys/personality.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "service/server/pid_identity.h"
#include "service/server/testing/capture.h"
#include "service/server/testing/server_fixture.h"
#include "service/server/testing/snapshot_streams.h"
#include "testdata/harness/subprocess.h"
#include "testdata/harness/tools.h"

namespace unwindd::service {
namespace {

using testing::CaptureOptions;
using testing::Keys;
using testing::ServerProcess;
using testing::TempDir;

constexpr char kFixture[] = "threads_c_O2_nofp_pie";

class PidTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (captures ptrace fixtures)";
    absl::StatusOr<std::unique_ptr<ServerProcess>> s =
        ServerProcess::Start(dir_.path(), {});
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = *std::move(s);
    stub_ = server_->Stub();
    // Inherited by the fixtures across exec: the same layout in both.
    const int old = personality(0xffffffff);
    ASSERT_NE(personality(old | ADDR_NO_RANDOMIZE), -1);
    a_ = Start();
    b_ = Start();
    personality(old);
    ASSERT_NE(a_, nullptr);
    ASSERT_NE(b_, nullptr);
    v1::UnwindProcessRequest req;
    req.set_pid(a_->pid());
    grpc::ClientContext c;
    grpc::Status st = stub_->UnwindProcess(&c, req, &want_);
    ASSERT_TRUE(st.ok()) << st.error_message();
    absl::StatusOr<uint64_t> a_start = ReadProcessStartTime(a_->pid());
    absl::StatusOr<uint64_t> b_start = ReadProcessStartTime(b_->pid());
    ASSERT_TRUE(a_start.ok() && b_start.ok());
    a_start_ = *a_start;
    b_start_ = *b_start;
    CaptureOptions o;
    o.max_stack = 256;
    absl::StatusOr<std::vector<v1::SnapshotRequest>> samples =
        testing::CaptureSamples(a_->pid(), o);
    ASSERT_TRUE(samples.ok()) << samples.status();
    samples_ = *std::move(samples);
  }

  std::unique_ptr<harness::RunningProgram> Start() {
    absl::StatusOr<harness::RunningProgram> p =
        harness::StartProgram(harness::FixturePath(kFixture));
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? std::make_unique<harness::RunningProgram>(std::move(*p)) : nullptr;
  }

  // A's samples, saying they are of `pid` started at `start`.
  std::vector<v1::SnapshotResponse> Send(pid_t pid, uint64_t start) {
    std::vector<v1::SnapshotRequest> s = samples_;
    for (v1::SnapshotRequest& r : s) {
      r.set_pid(pid);
      r.set_pid_start_time(start);
    }
    grpc::Status status;
    std::vector<v1::SnapshotResponse> out = testing::Stream(*stub_, s, &status);
    EXPECT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(out.size(), s.size());
    return out;
  }

  // Every sample unwound in full, from a live process's memory.
  void ExpectLive(const std::vector<v1::SnapshotResponse>& got) {
    ASSERT_EQ(static_cast<int>(got.size()), want_.threads_size());
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_FALSE(got[i].has_error()) << got[i].error().message();
      EXPECT_EQ(got[i].pid_ignored_reason(), "");
      EXPECT_EQ(Keys(got[i].stack()), Keys(want_.threads(i)))
          << i << ": " << got[i].stack().stop_detail();
    }
  }

  // No sample read a process: each says why, and the deep threads stop
  // where the 256 copied bytes end.
  void ExpectIgnored(const std::vector<v1::SnapshotResponse>& got,
                     const std::string& reason) {
    ASSERT_EQ(static_cast<int>(got.size()), want_.threads_size());
    int cut = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_FALSE(got[i].has_error()) << got[i].error().message();
      EXPECT_TRUE(absl::StrContains(got[i].pid_ignored_reason(), reason))
          << got[i].pid_ignored_reason();
      EXPECT_LE(got[i].stack().frames_size(), want_.threads(i).frames_size());
      if (got[i].stack().frames_size() < want_.threads(i).frames_size()) {
        ++cut;
        EXPECT_EQ(got[i].stack().stop(), v1::STOP_REASON_MEMORY_ERROR);
      }
    }
    EXPECT_GT(cut, 0) << "every walk fit in 256 bytes: the test proves nothing";
  }

  TempDir dir_;
  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<v1::Unwinder::Stub> stub_;
  std::unique_ptr<harness::RunningProgram> a_, b_;
  uint64_t a_start_ = 0, b_start_ = 0;
  std::vector<v1::SnapshotRequest> samples_;
  v1::UnwindResponse want_;
};

TEST_F(PidTest, TheRightStartTimeReadsTheProcess) {
  ExpectLive(Send(a_->pid(), a_start_));
  ExpectLive(Send(a_->pid(), 0));  // the start time the stream first saw
}

TEST_F(PidTest, AnotherProcessAtThePidIsNeverRead) {
  ASSERT_NE(a_start_ + 1, a_start_);
  ExpectIgnored(Send(a_->pid(), a_start_ + 1), "reused");
  // B would answer for A (same layout, same stacks) if it were asked...
  ExpectLive(Send(b_->pid(), b_start_));
  // ... but a sample of A's process is not B's.
  ExpectIgnored(Send(b_->pid(), a_start_), "reused");
}

TEST_F(PidTest, AnExitedProcessIsNeverRead) {
  const pid_t pid = a_->pid();
  a_->Kill();  // and reaped: the pid may be reused from now on
  ExpectIgnored(Send(pid, a_start_), "exited");
  ExpectIgnored(Send(pid, 0), "exited");
  // Without mappings there is nothing to unwind with.
  std::vector<v1::SnapshotRequest> s = {samples_[0]};
  s[0].set_pid(pid);
  s[0].clear_mappings();
  grpc::Status status;
  std::vector<v1::SnapshotResponse> got = testing::Stream(*stub_, s, &status);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].error().code(), grpc::StatusCode::FAILED_PRECONDITION)
      << got[0].error().message();
}

}  // namespace
}  // namespace unwindd::service
