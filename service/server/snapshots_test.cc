// SnapshotSession across samples: what one sample resolved (files, the
// address space and its cached steps) serves the next only while the
// mapping table is the same, and no sample sees another's stack. Samples
// are captured from the parked deep_stacks fixture, as a profiler sends
// them (stack copy, mappings with build-ids, no pid).
#include "service/server/snapshots.h"

#include <unistd.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "service/server/testing/capture.h"
#include "testdata/harness/subprocess.h"
#include "testdata/harness/tools.h"
#include "unwinder/module_cache.h"

namespace unwindd::service {
namespace {

constexpr char kFixture[] = "deep_stacks_O2_nofp_pie";

class SessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (captures ptrace fixtures)";
    absl::StatusOr<harness::RunningProgram> p = harness::StartProgram(
        absl::StrCat(harness::RunfilesRoot(), "/service/server/", kFixture));
    ASSERT_TRUE(p.ok()) << p.status();
    program_ = std::make_unique<harness::RunningProgram>(std::move(*p));
    testing::CaptureOptions o;
    o.with_pid = false;
    absl::StatusOr<std::vector<v1::SnapshotRequest>> s =
        testing::CaptureSamples(program_->pid(), o);
    ASSERT_TRUE(s.ok()) << s.status();
    // A parked worker thread (the first sample is main's, a few frames).
    ASSERT_GE(s->size(), 2u);
    sample_ = (*s)[1];
    Caller root;
    root.uid = 0;
    root.gid = 0;
    root.unrestricted = true;
    session_ = std::make_unique<SnapshotSession>(
        root, UnwindEnv{&cache_, nullptr}, index_, VdsoImage{}, SnapshotLimits{});
  }

  v1::ThreadStack Unwind(const v1::SnapshotRequest& r,
                         std::vector<v1::Module>* modules = nullptr) {
    std::atomic<bool> cancel{false};
    v1::SnapshotResponse got;
    absl::Status s = session_->Unwind(r, &cancel, &got);
    EXPECT_TRUE(s.ok()) << s;
    if (modules != nullptr) modules->assign(got.modules().begin(), got.modules().end());
    return got.stack();
  }

  absl::StatusCode Code(const v1::SnapshotRequest& r) {
    std::atomic<bool> cancel{false};
    v1::SnapshotResponse got;
    return session_->Unwind(r, &cancel, &got).code();
  }

  // The sample with the executable's build-id replaced by another.
  v1::SnapshotRequest WithWrongExeBuildId() const {
    v1::SnapshotRequest r = sample_;
    for (v1::Mapping& m : *r.mutable_mappings()) {
      if (absl::EndsWith(m.path(), kFixture)) m.set_build_id(std::string(40, '0'));
    }
    return r;
  }

  std::unique_ptr<harness::RunningProgram> program_;
  v1::SnapshotRequest sample_;
  unwinder::ModuleCache cache_;
  BuildIdIndex index_;
  std::unique_ptr<SnapshotSession> session_;
};

std::vector<uint64_t> Pcs(const v1::ThreadStack& t) {
  std::vector<uint64_t> out;
  for (const v1::Frame& f : t.frames()) out.push_back(f.pc());
  return out;
}

TEST_F(SessionTest, RepeatedSamplesGiveTheSameFrames) {
  v1::ThreadStack first = Unwind(sample_);
  ASSERT_GE(first.frames_size(), 20u) << first.stop_detail();
  EXPECT_EQ(first.stop(), v1::STOP_REASON_END_OF_STACK);
  for (int i = 0; i < 3; ++i) {
    v1::ThreadStack again = Unwind(sample_);
    EXPECT_EQ(Pcs(again), Pcs(first));
    EXPECT_EQ(again.stop(), first.stop());
  }
}

// A changed table is resolved anew (the executable's file is refused for
// the wrong build-id), and changing back resolves the right file again.
TEST_F(SessionTest, ChangedMappingsAreResolvedAgain) {
  std::vector<v1::Module> modules;
  v1::ThreadStack good = Unwind(sample_, &modules);
  ASSERT_GE(good.frames_size(), 20u) << good.stop_detail();

  v1::ThreadStack wrong = Unwind(WithWrongExeBuildId(), &modules);
  EXPECT_LT(wrong.frames_size(), good.frames_size());
  bool refused = false;
  for (const v1::Module& m : modules) {
    if (absl::EndsWith(m.path(), kFixture)) {
      refused = true;
      EXPECT_EQ(m.build_id(), std::string(40, '0'));
      EXPECT_FALSE(m.error().empty());
    }
  }
  EXPECT_TRUE(refused);

  v1::ThreadStack back = Unwind(sample_, &modules);
  EXPECT_EQ(Pcs(back), Pcs(good));
  for (const v1::Module& m : modules) EXPECT_TRUE(m.error().empty()) << m.path();
}

bool HasModule(const std::vector<v1::Module>& modules) {
  for (const v1::Module& m : modules) {
    if (absl::EndsWith(m.path(), kFixture)) return true;
  }
  return false;
}

// A moved mapping (same file, another address) is another table too.
TEST_F(SessionTest, MovedMappingIsResolvedAgain) {
  std::vector<v1::Module> modules;
  v1::ThreadStack good = Unwind(sample_, &modules);
  ASSERT_GE(good.frames_size(), 20u);
  ASSERT_TRUE(HasModule(modules));
  v1::SnapshotRequest moved = sample_;
  for (v1::Mapping& m : *moved.mutable_mappings()) {
    if (absl::EndsWith(m.path(), kFixture)) {
      m.set_start(m.start() + (uint64_t{1} << 40));
      m.set_end(m.end() + (uint64_t{1} << 40));
    }
  }
  // The executable's PCs are in no mapping now.
  Unwind(moved, &modules);
  EXPECT_FALSE(HasModule(modules));
  EXPECT_EQ(Pcs(Unwind(sample_, &modules)), Pcs(good));
  EXPECT_TRUE(HasModule(modules));
}

// Each sample is unwound from its own stack copy: a later sample with a
// shorter copy must not find the earlier one's bytes.
TEST_F(SessionTest, NoSampleSeesAnothersStack) {
  v1::ThreadStack good = Unwind(sample_);
  ASSERT_GE(good.frames_size(), 20u);
  v1::SnapshotRequest cut = sample_;
  cut.set_stack(sample_.stack().substr(0, 64));
  v1::ThreadStack short_walk = Unwind(cut);
  EXPECT_LT(short_walk.frames_size(), good.frames_size());
  EXPECT_EQ(short_walk.stop(), v1::STOP_REASON_MEMORY_ERROR);
  v1::SnapshotRequest none = sample_;
  none.clear_stack();
  EXPECT_LE(Unwind(none).frames_size(), short_walk.frames_size());
  EXPECT_EQ(Pcs(Unwind(sample_)), Pcs(good));
}

// A bad sample is its own error and does not disturb the next one.
TEST_F(SessionTest, BadSampleBetweenGoodOnes) {
  v1::ThreadStack good = Unwind(sample_);
  v1::SnapshotRequest bad = sample_;
  bad.clear_dwarf_registers();
  EXPECT_EQ(Code(bad), absl::StatusCode::kInvalidArgument);
  v1::SnapshotRequest overlapping = sample_;
  *overlapping.add_mappings() = sample_.mappings(0);
  EXPECT_EQ(Code(overlapping), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Pcs(Unwind(sample_)), Pcs(good));
}

}  // namespace
}  // namespace unwindd::service
