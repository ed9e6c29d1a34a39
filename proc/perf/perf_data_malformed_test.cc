// PerfDataReader on malformed files and streams: truncations, lying
// sizes, huge counts and zero-size records in every structure, and the
// limits on records and queued bytes; none may crash, hang or allocate
// without bound.
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "proc/perf/perf_data.h"
#include "proc/perf/testing/perf_data_test_common.h"
#include "proc/perf/testing/perf_data_writer.h"

namespace unwindd::proc::perf {
namespace {

using testing::Bytes8;
using testing::Collect;
using testing::ExpectTwoRoundsOrder;
using testing::PerfDataWriter;
using testing::Record;
using testing::Sample;
using testing::SampleSpec;
using testing::TwoRounds;



TEST(Malformed, EveryTruncatedHeaderIsAnError) {
  std::vector<uint8_t> bytes = TwoRounds().FileBytes();
  for (size_t n = 0; n < kFileHeaderSize + 8; ++n) {
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + n);
    auto r = PerfDataReader::OpenBuffer(cut);
    EXPECT_FALSE(r.ok()) << n;
  }
}

TEST(Malformed, Magic) {
  std::vector<uint8_t> bytes = TwoRounds().FileBytes();
  std::vector<uint8_t> swapped = bytes;
  std::reverse(swapped.begin(), swapped.begin() + 8);
  EXPECT_TRUE(absl::IsUnimplemented(PerfDataReader::OpenBuffer(swapped).status()));
  std::vector<uint8_t> v1 = bytes;
  memcpy(v1.data(), "PERFFILE", 8);
  EXPECT_TRUE(absl::IsUnimplemented(PerfDataReader::OpenBuffer(v1).status()));
  std::vector<uint8_t> junk = bytes;
  junk[0] ^= 1;
  EXPECT_TRUE(absl::IsDataLoss(PerfDataReader::OpenBuffer(junk).status()));
  std::vector<uint8_t> pipe_size = TwoRounds().PipeBytes();
  pipe_size[8] = 24;  // a pipe header claiming 24 bytes
  EXPECT_TRUE(absl::IsDataLoss(PerfDataReader::OpenBuffer(pipe_size).status()));
}

void SetU64(std::vector<uint8_t>& b, size_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i) b[at + i] = static_cast<uint8_t>(v >> (8 * i));
}
void SetU32(std::vector<uint8_t>& b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + i] = static_cast<uint8_t>(v >> (8 * i));
}

TEST(Malformed, AttrSection) {
  const std::vector<uint8_t> good = TwoRounds().FileBytes();
  // attr_size 0, attr_size too small, attrs outside the file, a lying
  // attr.size, ids outside the file, more ids than allowed.
  std::vector<uint8_t> b = good;
  SetU64(b, 16, 0);
  EXPECT_TRUE(absl::IsDataLoss(PerfDataReader::OpenBuffer(b).status()));
  b = good;
  SetU64(b, 16, 40);
  EXPECT_TRUE(absl::IsDataLoss(PerfDataReader::OpenBuffer(b).status()));
  b = good;
  SetU64(b, 24, ~uint64_t{0} - 8);  // attrs.offset near 2^64
  EXPECT_TRUE(absl::IsDataLoss(PerfDataReader::OpenBuffer(b).status()));
  b = good;
  SetU64(b, 32, uint64_t{1} << 40);  // attrs.size huge
  EXPECT_TRUE(absl::IsDataLoss(PerfDataReader::OpenBuffer(b).status()));
  b = good;
  SetU32(b, PerfDataWriter::kAttrsOffset + 4, 0xffff);  // attr.size lies
  EXPECT_TRUE(absl::IsDataLoss(PerfDataReader::OpenBuffer(b).status()));
  b = good;
  // attr.size 0 means VER0 (perf's read_attr): the ids section is then
  // read right after 64 bytes, here zeros: an attr without ids, no crash.
  SetU32(b, PerfDataWriter::kAttrsOffset + 4, 0);
  auto r0 = PerfDataReader::OpenBuffer(b);
  ASSERT_TRUE(r0.ok()) << r0.status();
  EXPECT_EQ((*r0)->attrs().at(0).sample_regs_user, 0u);
  EXPECT_TRUE((*r0)->attrs().at(0).ids.empty());
  b = good;
  const size_t ids = PerfDataWriter::kAttrsOffset + kAttrSizeVer8;
  SetU64(b, ids + 8, uint64_t{1} << 62);  // ids.size huge
  EXPECT_TRUE(absl::IsDataLoss(PerfDataReader::OpenBuffer(b).status()));
  b = good;
  SetU64(b, ids + 8, 12);  // not whole u64s
  EXPECT_TRUE(absl::IsDataLoss(PerfDataReader::OpenBuffer(b).status()));
  b = good;
  SetU64(b, 32, 0);  // no attrs at all
  EXPECT_TRUE(absl::IsDataLoss(PerfDataReader::OpenBuffer(b).status()));
}

TEST(Malformed, DataSectionAndRecordFraming) {
  PerfDataWriter w = TwoRounds();
  const std::vector<uint8_t> good = w.FileBytes();
  const uint64_t data_offset = good[40] | (uint64_t{good[41]} << 8);
  // Data outside the file.
  std::vector<uint8_t> b = good;
  SetU64(b, 40, good.size() + 8);
  EXPECT_TRUE(absl::IsDataLoss(PerfDataReader::OpenBuffer(b).status()));
  // Data running past the end, or data size 0 (perf killed before it
  // wrote the final header): records are read to the end of the file,
  // with a warning; here the feature sections that follow do not frame
  // as records, which is DataLoss after every real record was delivered.
  for (uint64_t size : {uint64_t{1} << 40, uint64_t{0}}) {
    b = good;
    SetU64(b, 48, size);
    auto r = PerfDataReader::OpenBuffer(b);
    ASSERT_TRUE(r.ok());
    Collect c;
    absl::Status st = (*r)->Read(c);
    EXPECT_TRUE(st.ok() || absl::IsDataLoss(st)) << st;
    EXPECT_EQ(c.ips.size(), 5u) << size;
    EXPECT_GE((*r)->warnings().count(), 1u);
  }
  // A record whose size is below 8, or 0 (would loop forever): DataLoss
  // naming its offset.
  for (uint16_t size : {0, 4, 7}) {
    b = good;
    b[data_offset + 6] = static_cast<uint8_t>(size);
    b[data_offset + 7] = 0;
    auto rr = PerfDataReader::OpenBuffer(b);
    ASSERT_TRUE(rr.ok());
    Collect cc;
    absl::Status st = (*rr)->Read(cc);
    EXPECT_TRUE(absl::IsDataLoss(st)) << size << st;
    EXPECT_TRUE(absl::StrContains(st.message(), "0x")) << st;
  }
  // A record running past the data: what precedes it is used.
  b = good;
  b[data_offset + 6] = 0xff;
  b[data_offset + 7] = 0xff;
  auto rt = PerfDataReader::OpenBuffer(b);
  ASSERT_TRUE(rt.ok());
  Collect ct;
  EXPECT_TRUE((*rt)->Read(ct).ok());
  EXPECT_GE((*rt)->warnings().count(), 1u);
}

TEST(Malformed, FeatureSections) {
  const std::vector<uint8_t> good = TwoRounds().FileBytes();
  const uint64_t table = (good[40] | (uint64_t{good[41]} << 8)) +
                         (good[48] | (uint64_t{good[49]} << 8) | (uint64_t{good[50]} << 16));
  // Feature order: BUILD_ID(2) HOSTNAME(3) OSRELEASE(4) ARCH(6) CMDLINE(11).
  std::vector<uint8_t> b = good;
  SetU64(b, table + 8, uint64_t{1} << 40);  // BUILD_ID section huge
  auto r = PerfDataReader::OpenBuffer(b);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)->info().build_ids.size(), 0u);
  EXPECT_EQ((*r)->info().arch, "x86_64") << "the other features still read";
  EXPECT_GE((*r)->warnings().count(), 1u);
  // A zero-size build-id entry (would loop): a warning, not a hang.
  b = good;
  const uint64_t bid = b[table] | (uint64_t{b[table + 1]} << 8) | (uint64_t{b[table + 2]} << 16);
  b[bid + 6] = 0;
  b[bid + 7] = 0;
  r = PerfDataReader::OpenBuffer(b);
  ASSERT_TRUE(r.ok());
  EXPECT_GE((*r)->warnings().count(), 1u);
  // A string longer than its section, and a huge CMDLINE count.
  b = good;
  const uint64_t host = b[table + 16] | (uint64_t{b[table + 17]} << 8) |
                        (uint64_t{b[table + 18]} << 16);
  SetU32(b, host, 1 << 30);
  r = PerfDataReader::OpenBuffer(b);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)->info().hostname, "");
  b = good;
  const uint64_t cmd = b[table + 64] | (uint64_t{b[table + 65]} << 8) |
                       (uint64_t{b[table + 66]} << 16);
  SetU32(b, cmd, 0xffffffff);
  r = PerfDataReader::OpenBuffer(b);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE((*r)->info().cmdline.empty());
  // The table itself outside the file.
  b = good;
  b.resize(table + 8);
  r = PerfDataReader::OpenBuffer(b);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE((*r)->info().arch.empty());
  EXPECT_GE((*r)->warnings().count(), 1u);
}

TEST(Malformed, PipeHeaderAttr) {
  Bytes8 body;
  body.U32(1).U32(0xffff);  // attr.size larger than the record
  std::vector<uint8_t> bytes;
  Bytes8 h;
  h.U64(kMagic).U64(kPipeHeaderSize);
  bytes = h.bytes();
  std::vector<uint8_t> rec = Record(kRecordHeaderAttr, 0, body.bytes());
  rec.resize(8 + 64, 0);
  SetU32(rec, 8 + 4, 0xffff);
  bytes.insert(bytes.end(), rec.begin(), rec.end());
  auto r = PerfDataReader::OpenBuffer(bytes);
  ASSERT_TRUE(r.ok());
  Collect c;
  EXPECT_TRUE(absl::IsDataLoss((*r)->Read(c)));
}

TEST(Limits, RecordsAndQueue) {
  std::vector<uint8_t> bytes = TwoRounds().FileBytes();
  Limits few;
  few.max_records = 3;
  auto r = PerfDataReader::OpenBuffer(bytes, few);
  ASSERT_TRUE(r.ok());
  Collect c;
  ASSERT_TRUE((*r)->Read(c).ok());
  EXPECT_EQ((*r)->stats().records, 3u);
  EXPECT_GE((*r)->warnings().count(), 1u);

  // A queue bounded at 2 records: delivered early, in order for in-order
  // input, and never more than the bound queued.
  PerfDataWriter w;
  EventAttr a = testing::DwarfCallGraphAttr();
  w.AddAttr(a);
  for (uint64_t t = 1; t <= 50; ++t) w.Add(Sample(a, t, t));
  std::vector<uint8_t> b2 = w.FileBytes();
  Limits q;
  q.max_queued_events = 2;
  r = PerfDataReader::OpenBuffer(b2, q);
  ASSERT_TRUE(r.ok());
  Collect c2;
  ASSERT_TRUE((*r)->Read(c2).ok());
  ASSERT_EQ(c2.ips.size(), 50u);
  for (uint64_t i = 0; i < 50; ++i) EXPECT_EQ(c2.ips[i], i + 1);
  EXPECT_LE((*r)->stats().max_queued, 3u);
  EXPECT_GT((*r)->stats().early_flushes, 0u);
}

TEST(Limits, QueuedBytesOfAStream) {
  PerfDataWriter w;
  EventAttr a = testing::DwarfCallGraphAttr();
  w.AddAttr(a);
  for (uint64_t t = 1; t <= 40; ++t) w.Add(Sample(a, t, t));
  const std::vector<uint8_t> bytes = w.PipeBytes();
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  std::thread writer([&] {
    (void)!write(fds[1], bytes.data(), bytes.size());
    close(fds[1]);
  });
  Limits l;
  l.max_queued_bytes = 3 * 100;  // a few records' copies
  auto r = PerfDataReader::OpenStream(memory::ScopedFd(fds[0]), l);
  ASSERT_TRUE(r.ok());
  Collect c;
  ASSERT_TRUE((*r)->Read(c).ok());
  writer.join();
  ASSERT_EQ(c.ips.size(), 40u);
  for (uint64_t i = 0; i < 40; ++i) EXPECT_EQ(c.ips[i], i + 1);
  EXPECT_GT((*r)->stats().early_flushes, 0u);
  EXPECT_LE((*r)->stats().max_queued, 5u);
}

TEST(Malformed, RandomCorruptionNeverCrashes) {
  const std::vector<uint8_t> file = TwoRounds().FileBytes();
  const std::vector<uint8_t> pipe = TwoRounds().PipeBytes();
  std::mt19937 rng(1234);
  for (int iter = 0; iter < 3000; ++iter) {
    std::vector<uint8_t> b = (iter % 2) ? file : pipe;
    const int flips = 1 + rng() % 4;
    for (int i = 0; i < flips; ++i) b[rng() % b.size()] = static_cast<uint8_t>(rng());
    if (iter % 7 == 0) b.resize(rng() % b.size());
    auto r = PerfDataReader::OpenBuffer(b);
    if (!r.ok()) continue;
    Collect c;
    (void)(*r)->Read(c);
  }
}

}  // namespace
}  // namespace unwindd::proc::perf
