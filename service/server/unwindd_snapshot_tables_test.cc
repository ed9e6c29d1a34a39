// Mapping tables on snapshot streams, against the real unwindd and real
// gRPC: a table sent once and named by id gives the frames UnwindProcess
// finds on the live process (file offsets included), on both RPCs; unknown,
// released, refused and over-limit tables are per-sample errors; a file
// that is another inode than the sample recorded is not used.
#include <unistd.h>

#include <memory>
#include <string>
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

using testing::CaptureOptions;
using testing::Keys;
using testing::ServerProcess;
using testing::TakeTable;
using testing::TempDir;

constexpr char kFixture[] = "threads_c_O2_nofp_pie";

class TablesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (captures ptrace fixtures)";
    absl::StatusOr<std::unique_ptr<ServerProcess>> s = ServerProcess::Start(
        dir_.path(), {"--max-mapping-tables=3", "--max-mapping-table-bytes=65536"});
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = *std::move(s);
    stub_ = server_->Stub();
    absl::StatusOr<harness::RunningProgram> p =
        harness::StartProgram(harness::FixturePath(kFixture));
    ASSERT_TRUE(p.ok()) << p.status();
    program_ = std::make_unique<harness::RunningProgram>(std::move(*p));
    v1::UnwindProcessRequest req;
    req.set_pid(program_->pid());
    grpc::ClientContext c;
    grpc::Status st = stub_->UnwindProcess(&c, req, &want_);
    ASSERT_TRUE(st.ok()) << st.error_message();
  }

  std::vector<v1::SnapshotRequest> Capture(CaptureOptions o) {
    absl::StatusOr<std::vector<v1::SnapshotRequest>> s =
        testing::CaptureSamples(program_->pid(), o);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? *s : std::vector<v1::SnapshotRequest>{};
  }
  std::vector<v1::SnapshotRequest> CaptureWithoutPid() {
    CaptureOptions o;
    o.with_pid = false;
    return Capture(o);
  }

  std::vector<v1::SnapshotResponse> Stream(const std::vector<v1::SnapshotRequest>& s) {
    grpc::Status status;
    std::vector<v1::SnapshotResponse> out = testing::Stream(*stub_, s, &status);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return out;
  }

  // Every response has its thread's live frames, file offsets included,
  // and each file offset is what the sample's own mappings say.
  void ExpectLikeLive(const std::vector<v1::SnapshotResponse>& got,
                      const std::vector<v1::Mapping>& mappings) {
    ASSERT_EQ(static_cast<int>(got.size()), want_.threads_size());
    for (size_t i = 0; i < got.size(); ++i) {
      const v1::SnapshotResponse& r = got[i];
      ASSERT_FALSE(r.has_error()) << r.error().message();
      EXPECT_EQ(r.sample_id(), i);
      EXPECT_EQ(Keys(r.stack()), Keys(want_.threads(i))) << r.stack().stop_detail();
      EXPECT_EQ(r.pid_ignored_reason(), "");
      int with_module = 0;
      for (const v1::Frame& f : r.stack().frames()) {
        if (!f.has_module()) continue;
        ++with_module;
        ASSERT_LT(f.module(), static_cast<uint32_t>(r.modules_size()));
        EXPECT_FALSE(r.modules(f.module()).build_id().empty());
        // pc - mapping start + mapping offset (perf's map__map_ip).
        bool found = false;
        for (const v1::Mapping& m : mappings) {
          if (f.pc() >= m.start() && f.pc() < m.end()) {
            EXPECT_EQ(f.file_offset(), f.pc() - m.start() + m.offset());
            found = true;
          }
        }
        EXPECT_TRUE(found) << std::hex << f.pc();
      }
      EXPECT_GT(with_module, 0);
    }
  }

  TempDir dir_;
  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<v1::Unwinder::Stub> stub_;
  std::unique_ptr<harness::RunningProgram> program_;
  v1::UnwindResponse want_;
};

TEST_F(TablesTest, TableSentOnceThenNamedById) {
  std::vector<v1::SnapshotRequest> samples = CaptureWithoutPid();
  ASSERT_GE(samples.size(), 2u);
  const std::vector<v1::Mapping> mappings(samples[0].mappings().begin(),
                                          samples[0].mappings().end());
  v1::MappingTable table = TakeTable(samples, 7);
  *samples[0].mutable_mapping_table() = table;  // sent with the first only
  ExpectLikeLive(Stream(samples), mappings);
  // A sample carrying its table without naming it uses that table.
  samples[0].set_mapping_table_id(0);
  ExpectLikeLive(Stream(samples), mappings);
}

TEST_F(TablesTest, BatchTablesAndRelease) {
  std::vector<v1::SnapshotRequest> samples = CaptureWithoutPid();
  const std::vector<v1::Mapping> mappings(samples[0].mappings().begin(),
                                          samples[0].mappings().end());
  v1::MappingTable table = TakeTable(samples, 1);
  std::vector<v1::SnapshotBatch> batches(3);
  *batches[0].add_mapping_tables() = table;
  for (const v1::SnapshotRequest& r : samples) *batches[1].add_samples() = r;
  batches[1].add_release_mapping_table_ids(1);  // after its samples
  *batches[2].add_samples() = samples[0];
  grpc::Status status;
  std::vector<v1::SnapshotResponse> got = testing::StreamBatches(*stub_, batches, &status);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(got.size(), samples.size() + 1);
  ExpectLikeLive(std::vector<v1::SnapshotResponse>(got.begin(), got.end() - 1), mappings);
  EXPECT_EQ(got.back().error().code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(absl::StrContains(got.back().error().message(), "was released"))
      << got.back().error().message();

  // Tables belong to their stream: another one does not know table 1.
  std::vector<v1::SnapshotResponse> other = Stream({samples[0]});
  ASSERT_EQ(other.size(), 1u);
  EXPECT_EQ(other[0].error().code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_FALSE(other[0].has_stack());
}

TEST_F(TablesTest, MalformedTablesAndSamplesAreTheirOwnErrors) {
  std::vector<v1::SnapshotRequest> samples = CaptureWithoutPid();
  ASSERT_FALSE(samples.empty());
  const v1::SnapshotRequest own = samples[0];  // with its own mappings
  v1::MappingTable good = TakeTable(samples, 5);
  const v1::SnapshotRequest named = samples[0];  // names table 5

  v1::MappingTable overlapping = good;
  overlapping.set_id(6);
  *overlapping.add_mappings() = overlapping.mappings(0);
  v1::MappingTable big_image = good;
  big_image.set_id(8);
  // On the smallest mapping (the first can be huge: a sanitizer build's
  // fixtures start with 256 MiB of shadow memory).
  int smallest = 0;
  for (int i = 0; i < big_image.mappings_size(); ++i) {
    const v1::Mapping& m = big_image.mappings(i);
    const v1::Mapping& s = big_image.mappings(smallest);
    if (m.end() - m.start() < s.end() - s.start()) smallest = i;
  }
  big_image.mutable_mappings(smallest)->set_image(std::string(
      big_image.mappings(smallest).end() - big_image.mappings(smallest).start() + 1, 'x'));

  std::vector<v1::SnapshotRequest> send;
  auto add = [&](v1::SnapshotRequest r) {
    r.set_sample_id(100 + send.size());
    send.push_back(std::move(r));
  };
  v1::SnapshotRequest r = named;
  *r.mutable_mapping_table() = good;
  add(r);  // 100: defines table 5 and uses it
  r = named;
  r.set_mapping_table_id(6);
  *r.mutable_mapping_table() = overlapping;
  add(r);  // 101: refused table
  r = named;
  r.set_mapping_table_id(6);
  add(r);  // 102: names the refused table again
  r = named;
  r.set_mapping_table_id(8);
  *r.mutable_mapping_table() = big_image;
  add(r);  // 103: image larger than its mapping
  r = own;
  r.set_mapping_table_id(5);
  add(r);  // 104: own mappings and a table
  r = named;
  r.set_sysroot("/srv");
  add(r);  // 105: a table and a sysroot of its own
  r = named;
  r.set_mapping_table_id(0);
  *r.mutable_mapping_table() = good;
  r.mutable_mapping_table()->set_id(0);
  add(r);  // 106: a table without an id
  r = named;
  r.set_mapping_table_id(99);
  add(r);  // 107: never sent
  add(named);  // 108: table 5 still works
  add(own);    // 109: the old way still works too
  r = named;
  r.set_mapping_table_id(11);
  *r.mutable_mapping_table() = good;
  r.mutable_mapping_table()->set_id(11);
  r.clear_perf_registers();
  r.clear_dwarf_registers();
  add(r);  // 110: no registers, but its table is kept...
  r = named;
  r.set_mapping_table_id(11);
  add(r);  // 111: ... for this one
  r = named;
  r.add_debug_dirs("relative/debug");
  add(r);  // 112: debug_dirs are checked for samples naming a table too
  r = named;
  r.set_debuginfod(true);
  add(r);  // 113: this server has no --debuginfod
  r = named;
  r.add_debug_dirs("/nonexistent/debug");
  add(r);  // 114: other debug_dirs: table 5 gets an address space for them
  add(named);  // 115: and the first one again

  std::vector<v1::SnapshotResponse> got = Stream(send);
  ASSERT_EQ(got.size(), send.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i].sample_id(), 100 + i);
  EXPECT_FALSE(got[0].has_error()) << got[0].error().message();
  for (int i : {1, 2, 3, 4, 5, 6, 7}) {
    EXPECT_EQ(got[i].error().code(), grpc::StatusCode::INVALID_ARGUMENT)
        << i << ": " << got[i].error().message();
    EXPECT_FALSE(got[i].has_stack()) << i;
  }
  EXPECT_TRUE(absl::StrContains(got[1].error().message(), "overlap"));
  EXPECT_EQ(got[2].error().message(), got[1].error().message());
  EXPECT_TRUE(absl::StrContains(got[3].error().message(), "larger than the mapping"));
  EXPECT_TRUE(absl::StrContains(got[7].error().message(), "was not sent"));
  EXPECT_FALSE(got[8].has_error()) << got[8].error().message();
  EXPECT_EQ(Keys(got[8].stack()), Keys(want_.threads(0)));
  EXPECT_FALSE(got[9].has_error()) << got[9].error().message();
  EXPECT_EQ(Keys(got[9].stack()), Keys(want_.threads(0)));
  EXPECT_EQ(got[10].error().code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_FALSE(got[11].has_error()) << got[11].error().message();
  EXPECT_EQ(Keys(got[11].stack()), Keys(want_.threads(0)));
  EXPECT_EQ(got[12].error().code(), grpc::StatusCode::INVALID_ARGUMENT)
      << got[12].error().message();
  EXPECT_EQ(got[13].error().code(), grpc::StatusCode::FAILED_PRECONDITION)
      << got[13].error().message();
  for (int i : {14, 15}) {
    EXPECT_FALSE(got[i].has_error()) << i << ": " << got[i].error().message();
    EXPECT_EQ(Keys(got[i].stack()), Keys(want_.threads(0))) << i;
  }

  // A batch's table without an id cannot be named by any sample: the
  // stream ends.
  v1::SnapshotBatch batch;
  *batch.add_mapping_tables() = good;
  batch.mutable_mapping_tables(0)->set_id(0);
  grpc::Status status;
  testing::StreamBatches(*stub_, {batch}, &status);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

// The server runs with --max-mapping-tables=3 --max-mapping-table-bytes=65536.
TEST_F(TablesTest, TableLimitsAreResourceExhaustedUntilReleased) {
  std::vector<v1::SnapshotRequest> samples = CaptureWithoutPid();
  ASSERT_FALSE(samples.empty());
  v1::MappingTable table = TakeTable(samples, 1);
  const v1::SnapshotRequest named = samples[0];
  v1::SnapshotBatch define;
  for (uint64_t id : {1, 2, 3, 4}) {
    *define.add_mapping_tables() = table;
    define.mutable_mapping_tables()->rbegin()->set_id(id);
  }
  for (uint64_t id : {1, 4}) {
    v1::SnapshotRequest r = named;
    r.set_mapping_table_id(id);
    *define.add_samples() = r;
  }
  define.add_release_mapping_table_ids(2);
  define.add_release_mapping_table_ids(3);
  v1::SnapshotBatch again;  // room for table 4 now, and (by count) table 9
  *again.add_mapping_tables() = table;
  again.mutable_mapping_tables(0)->set_id(4);
  // A table bigger than what is left of the 64 KiB (an anonymous mapping
  // with an image).
  v1::MappingTable heavy;
  heavy.set_id(9);
  v1::Mapping* m = heavy.add_mappings();
  m->set_start(0x10000000);
  m->set_end(0x10000000 + (1 << 20));
  m->set_image(std::string(60 << 10, '\0'));
  v1::SnapshotRequest r = named;
  r.set_mapping_table_id(4);
  *again.add_samples() = r;
  r.set_mapping_table_id(0);
  *r.mutable_mapping_table() = heavy;
  *again.add_samples() = r;

  grpc::Status status;
  std::vector<v1::SnapshotResponse> got =
      testing::StreamBatches(*stub_, {define, again}, &status);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(got.size(), 4u);
  EXPECT_FALSE(got[0].has_error()) << got[0].error().message();
  EXPECT_EQ(got[1].error().code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_TRUE(absl::StrContains(got[1].error().message(), "mapping table 4 was refused"))
      << got[1].error().message();
  EXPECT_FALSE(got[2].has_error()) << got[2].error().message();
  EXPECT_EQ(Keys(got[2].stack()), Keys(want_.threads(0)));
  EXPECT_EQ(got[3].error().code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_TRUE(absl::StrContains(got[3].error().message(), "bytes"))
      << got[3].error().message();
}

// Without build-ids, the inode and device perf records decide whether the
// file at the path is the one that was mapped.
TEST_F(TablesTest, InodeAndDeviceWithoutBuildIds) {
  CaptureOptions o;
  o.with_pid = false;
  o.mappings = CaptureOptions::Mappings::kPaths;
  o.identities = true;
  std::vector<v1::SnapshotRequest> samples = Capture(o);
  ASSERT_FALSE(samples.empty());
  const std::vector<v1::Mapping> mappings(samples[0].mappings().begin(),
                                          samples[0].mappings().end());
  v1::MappingTable table = TakeTable(samples, 1);
  for (const v1::Mapping& m : table.mappings()) {
    if (absl::EndsWith(m.path(), kFixture)) {
      ASSERT_NE(m.inode(), 0u);
    }
  }
  *samples[0].mutable_mapping_table() = table;
  ExpectLikeLive(Stream(samples), mappings);

  for (v1::Mapping& m : *table.mutable_mappings()) {
    if (absl::EndsWith(m.path(), kFixture)) m.set_inode(m.inode() + 1);
  }
  *samples[0].mutable_mapping_table() = table;
  for (const v1::SnapshotResponse& r : Stream(samples)) {
    ASSERT_FALSE(r.has_error()) << r.error().message();
    bool saw = false;
    for (const v1::Module& m : r.modules()) {
      if (!absl::EndsWith(m.path(), kFixture)) continue;
      saw = true;
      EXPECT_FALSE(m.error().empty());
    }
    // No frame is recovered with the executable's CFI (the frame above
    // one of its PCs); frame pointers through the stack copy may still be.
    const auto& frames = r.stack().frames();
    for (int i = 0; i + 1 < frames.size(); ++i) {
      const v1::Frame& f = frames[i];
      if (f.has_module() && absl::EndsWith(r.modules(f.module()).path(), kFixture)) {
        EXPECT_NE(frames[i + 1].method(), v1::METHOD_EH_FRAME) << i;
      }
    }
    EXPECT_TRUE(saw);
  }
}

}  // namespace
}  // namespace unwindd::service
