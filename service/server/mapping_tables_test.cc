// Bounded work on the worst case (issue 14): a snapshot with a million
// mappings, as one MappingTable or as a sample's own mappings, is refused
// with RESOURCE_EXHAUSTED and a message naming the limit, in bounded time,
// before anything is looked at or opened; the sample naming a refused
// table gets the same refusal.
#include "service/server/mapping_tables.h"

#include <atomic>
#include <string>

#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "proto/unwinder.pb.h"
#include "service/server/snapshot_messages.h"
#include "service/server/snapshots.h"
#include "unwinder/module_cache.h"

namespace unwindd::service {
namespace {

constexpr int kMillion = 1000000;
// Far more than a count check needs; a walk of the mappings (sorting,
// copying paths) would also fit, opening a file per mapping would not.
constexpr absl::Duration kBound = absl::Seconds(5);

// A million distinct, non-overlapping one-page mappings of one file.
void AddMappings(google::protobuf::RepeatedPtrField<v1::Mapping>* out) {
  out->Reserve(kMillion);
  for (int i = 0; i < kMillion; ++i) {
    v1::Mapping* m = out->Add();
    m->set_start(0x10000000ull + uint64_t{4096} * i);
    m->set_end(m->start() + 4096);
    m->set_path("/usr/lib/libmany.so");
  }
}

// A sample that would unwind if its mappings were accepted.
v1::SnapshotRequest Sample() {
  v1::SnapshotRequest r;
  r.set_sample_id(9);
  r.set_arch(v1::ARCH_X86_64);
  (*r.mutable_dwarf_registers()->mutable_values())[7] = 0x7ff000;   // rsp
  (*r.mutable_dwarf_registers()->mutable_values())[16] = 0x10000010;  // rip
  r.set_stack_address(0x7ff000);
  r.set_stack(std::string(64, '\0'));
  return r;
}

class MillionMappingsTest : public ::testing::Test {
 protected:
  MillionMappingsTest()
      : session_(Caller{}, UnwindEnv{&cache_, nullptr}, index_, VdsoImage{},
                 SnapshotLimits{}) {}

  // The sample's answer as the client parses it, and its status.
  absl::Status Answer(const v1::SnapshotRequest& r, v1::SnapshotResponse* got) {
    std::atomic<bool> cancel{false};
    SampleAnswer answer;
    std::string bytes;
    absl::Status s = AnswerSample(session_, r, &cancel, absl::OkStatus(),
                                  /*batch=*/false, &answer, &bytes);
    EXPECT_TRUE(got->ParseFromString(bytes));
    return s;
  }

  unwinder::ModuleCache cache_;
  BuildIdIndex index_;
  SnapshotSession session_;
};

TEST_F(MillionMappingsTest, ParseTableRefusesThemByCount) {
  google::protobuf::RepeatedPtrField<v1::Mapping> mappings;
  AddMappings(&mappings);
  google::protobuf::RepeatedPtrField<v1::PathMapping> path_map;
  const absl::Time start = absl::Now();
  absl::StatusOr<std::shared_ptr<TableDef>> def =
      ParseTable(mappings, "", path_map, TableLimits{});
  EXPECT_LT(absl::Now() - start, kBound);
  ASSERT_FALSE(def.ok());
  EXPECT_EQ(def.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(absl::StrContains(def.status().message(),
                                "1000000 mappings is over the server's limit of 65536"))
      << def.status();
}

TEST_F(MillionMappingsTest, SampleWithItsOwnMappings) {
  v1::SnapshotRequest r = Sample();
  AddMappings(r.mutable_mappings());
  v1::SnapshotResponse got;
  const absl::Time start = absl::Now();
  absl::Status s = Answer(r, &got);
  EXPECT_LT(absl::Now() - start, kBound);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_EQ(got.sample_id(), 9u);
  EXPECT_EQ(got.error().code(), static_cast<int>(absl::StatusCode::kResourceExhausted));
  EXPECT_TRUE(absl::StrContains(got.error().message(), "1000000 mappings"))
      << got.error().message();
  EXPECT_FALSE(got.has_stack());
}

TEST_F(MillionMappingsTest, MappingTableInABatchAndTheSampleNamingIt) {
  v1::SnapshotBatch batch;
  v1::MappingTable* t = batch.add_mapping_tables();
  t->set_id(5);
  AddMappings(t->mutable_mappings());
  v1::SnapshotRequest r = Sample();
  r.set_mapping_table_id(5);
  *batch.add_samples() = r;

  const absl::Time start = absl::Now();
  // The table is refused, the stream goes on: its samples are told.
  EXPECT_TRUE(BeginBatch(session_, batch).ok());
  EXPECT_EQ(session_.tables().size(), 0u);
  v1::SnapshotResponse got;
  absl::Status s = Answer(batch.samples(0), &got);
  EXPECT_LT(absl::Now() - start, kBound);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_EQ(got.error().code(), static_cast<int>(absl::StatusCode::kResourceExhausted));
  EXPECT_TRUE(absl::StrContains(got.error().message(), "mapping table 5 was refused"))
      << got.error().message();
  EXPECT_TRUE(absl::StrContains(got.error().message(), "1000000 mappings"))
      << got.error().message();
}

// The limit itself: 65,536 mappings are accepted (and cost no file
// opened until a sample needs them).
TEST_F(MillionMappingsTest, TheLimitItselfIsAccepted) {
  v1::MappingTable t;
  t.set_id(6);
  for (int i = 0; i < SnapshotLimits{}.max_mappings; ++i) {
    v1::Mapping* m = t.add_mappings();
    m->set_start(0x10000000ull + uint64_t{4096} * i);
    m->set_end(m->start() + 4096);
  }
  EXPECT_TRUE(session_.DefineTable(t).ok());
  EXPECT_EQ(session_.tables().size(), 1u);
  v1::Mapping* one_more = t.add_mappings();
  one_more->set_start(0x1000);
  one_more->set_end(0x2000);
  absl::Status s = session_.DefineTable(t);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
}

}  // namespace
}  // namespace unwindd::service
