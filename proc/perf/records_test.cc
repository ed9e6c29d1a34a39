#include "proc/perf/records.h"

#include <deque>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "proc/perf/abi.h"
#include "proc/perf/testing/perf_data_writer.h"

namespace unwindd::proc::perf {
namespace {

using testing::AttrBytes;
using testing::Bytes8;
using testing::Record;
using testing::SampleRecord;
using testing::SampleSpec;

EventAttr AllFieldsAttr() {
  EventAttr a = testing::DwarfCallGraphAttr();
  a.sample_type = kSampleIdentifier | kSampleIp | kSampleTid | kSampleTime |
                  kSampleAddr | kSampleId | kSampleStreamId | kSampleCpu |
                  kSamplePeriod | kSampleRead | kSampleCallchain | kSampleRaw |
                  kSampleBranchStack | kSampleRegsUser | kSampleStackUser |
                  kSampleWeightStruct | kSampleDataSrc | kSampleTransaction |
                  kSampleRegsIntr | kSamplePhysAddr | kSampleAux | kSampleCgroup |
                  kSampleDataPageSize | kSampleCodePageSize;
  a.read_format = kReadTotalTimeEnabled | kReadTotalTimeRunning | kReadId | kReadLost;
  a.branch_sample_type = kBranchHwIndex;
  a.sample_regs_user = 0x7;  // 3 registers
  a.sample_regs_intr = 0x3;  // 2 registers
  return a;
}

SampleSpec AllFieldsSpec() {
  SampleSpec s;
  s.id = 77;
  s.ip = 0x401000;
  s.pid = 10;
  s.tid = 11;
  s.time = 123456789;
  s.addr = 0xdead;
  s.stream_id = 5;
  s.cpu = 3;
  s.period = 250000;
  s.read_values = {100, 2, 3, 77, 0};  // value, enabled, running, id, lost
  s.callchain = {0xfffffffffffffe00ULL, 0xffffffff81000000ULL,
                 0xfffffffffffffe00ULL - 0x200 + 0x200, 0x401000};
  s.raw = {1, 2, 3, 4};  // 4 + 4 bytes: ends 8-aligned
  s.branch_nr = 2;
  s.branch_hw_idx = 9;
  s.regs_abi = kRegsAbi64;
  s.regs = {0x1111, 0x2222, 0x3333};
  s.stack = std::vector<uint8_t>(64, 0xab);
  s.dyn_size = 40;
  s.weight = 12;
  s.data_src = 13;
  s.transaction = 14;
  s.regs_intr_abi = kRegsAbi64;
  s.regs_intr = {0x44, 0x55};
  s.phys_addr = 15;
  s.cgroup = 16;
  s.data_page_size = 4096;
  s.code_page_size = 8192;
  s.aux = std::vector<uint8_t>(16, 0xcd);
  return s;
}

// Parsers point into the record they parse (spans, names): every record
// a test parses lives until the test binary ends.
absl::Span<const uint8_t> Kept(std::vector<uint8_t> record) {
  static auto* kept = new std::deque<std::vector<uint8_t>>;
  kept->push_back(std::move(record));
  return kept->back();
}

TEST(ParseSample, EveryFieldInTheKernelsOrder) {
  const EventAttr a = AllFieldsAttr();
  const SampleSpec spec = AllFieldsSpec();
  std::vector<uint8_t> rec = SampleRecord(a, spec);
  Sample s;
  ASSERT_TRUE(ParseSample(rec, a, s).ok());
  EXPECT_EQ(s.id, 77u);
  EXPECT_EQ(s.ip, 0x401000u);
  EXPECT_EQ(s.pid, 10u);
  EXPECT_EQ(s.tid, 11u);
  EXPECT_EQ(s.time, 123456789u);
  EXPECT_EQ(s.addr, 0xdeadu);
  EXPECT_EQ(s.stream_id, 5u);
  EXPECT_EQ(s.cpu, 3u);
  EXPECT_EQ(s.period, 250000u);
  EXPECT_EQ(s.read.size(), 5 * 8u);
  ASSERT_EQ(s.callchain.size(), 4u);
  EXPECT_EQ(s.callchain[3], 0x401000u);
  EXPECT_EQ(s.raw.size(), 4u);
  EXPECT_EQ(s.branch_nr, 2u);
  EXPECT_EQ(s.branch_hw_idx, 9u);
  EXPECT_EQ(s.branch_entries.size(), 2 * 24u);
  EXPECT_EQ(s.regs_user_abi, kRegsAbi64);
  ASSERT_EQ(s.regs_user.size(), 3u);
  EXPECT_EQ(s.regs_user[2], 0x3333u);
  EXPECT_EQ(s.stack_user.size(), 64u);
  EXPECT_EQ(s.stack_user_dyn_size, 40u);
  EXPECT_EQ(s.valid_stack().size(), 40u);
  EXPECT_EQ(s.weight, 12u);
  EXPECT_EQ(s.data_src, 13u);
  EXPECT_EQ(s.transaction, 14u);
  ASSERT_EQ(s.regs_intr.size(), 2u);
  EXPECT_EQ(s.regs_intr[1], 0x55u);
  EXPECT_EQ(s.phys_addr, 15u);
  EXPECT_EQ(s.cgroup, 16u);
  EXPECT_EQ(s.data_page_size, 4096u);
  EXPECT_EQ(s.code_page_size, 8192u);
  EXPECT_EQ(s.aux.size(), 16u);
}

TEST(KernelCallchain, BetweenTheKernelMarkerAndTheNext) {
  EventAttr a;
  a.sample_type = kSampleCallchain;
  SampleSpec spec;
  spec.callchain = {kContextKernel, 0xffffffff81000010ULL, 0xffffffff81000020ULL,
                    kContextUser, 0x401000, 0x402000};
  Sample s;
  // The sample points into the record: the record must outlive it.
  const std::vector<uint8_t> record = SampleRecord(a, spec);
  ASSERT_TRUE(ParseSample(record, a, s).ok());
  EXPECT_EQ(KernelCallchain(s),
            (std::vector<uint64_t>{0xffffffff81000010ULL, 0xffffffff81000020ULL}));
  spec.callchain = {kContextUser, 0x401000};
  const std::vector<uint8_t> user_only = SampleRecord(a, spec);
  ASSERT_TRUE(ParseSample(user_only, a, s).ok());
  EXPECT_TRUE(KernelCallchain(s).empty());
}

TEST(UserCallchain, BetweenTheUserMarkerAndTheNext) {
  EventAttr a;
  a.sample_type = kSampleCallchain;
  SampleSpec spec;
  // A guest's part after the user's is not the user's.
  spec.callchain = {kContextKernel, 0xffffffff81000010ULL, kContextUser, 0x401000,
                    0x402000,       0x403000,              kContextGuest, 0x501000};
  Sample s;
  const std::vector<uint8_t> record = SampleRecord(a, spec);
  ASSERT_TRUE(ParseSample(record, a, s).ok());
  std::vector<uint64_t> user = {1, 2, 3, 4, 5};  // cleared first
  UserCallchainInto(s, user);
  EXPECT_EQ(user, (std::vector<uint64_t>{0x401000, 0x402000, 0x403000}));
  // --call-graph dwarf: the kernel's part only.
  spec.callchain = {kContextKernel, 0xffffffff81000010ULL};
  const std::vector<uint8_t> kernel_only = SampleRecord(a, spec);
  ASSERT_TRUE(ParseSample(kernel_only, a, s).ok());
  UserCallchainInto(s, user);
  EXPECT_TRUE(user.empty());
}

TEST(ParseSample, EveryTruncationIsDataLossNeverACrash) {
  const EventAttr a = AllFieldsAttr();
  std::vector<uint8_t> rec = SampleRecord(a, AllFieldsSpec());
  for (size_t n = 0; n < rec.size(); ++n) {
    std::vector<uint8_t> cut(rec.begin(), rec.begin() + n);
    Sample s;
    absl::Status st = ParseSample(cut, a, s);
    EXPECT_TRUE(absl::IsDataLoss(st)) << n << ": " << st;
  }
}

TEST(ParseSample, ReadFormatVariants) {
  for (uint64_t rf = 0; rf < 32; ++rf) {
    EventAttr a;
    a.sample_type = kSampleRead | kSamplePeriod;
    a.read_format = rf;
    SampleSpec spec;
    spec.period = 99;
    const int per = 1 + ((rf & kReadId) != 0) + ((rf & kReadLost) != 0);
    const int times = ((rf & kReadTotalTimeEnabled) != 0) + ((rf & kReadTotalTimeRunning) != 0);
    size_t words;
    if (rf & kReadGroup) {
      spec.read_values.push_back(3);  // nr
      words = 1 + times + 3 * per;
    } else {
      words = times + per;
    }
    while (spec.read_values.size() < words) spec.read_values.push_back(7);
    // A field after READ must land where it should.
    a.sample_type |= kSampleCgroup;
    spec.cgroup = 0xc6;
    Sample s;
    ASSERT_TRUE(ParseSample(Kept(SampleRecord(a, spec)), a, s).ok()) << rf;
    EXPECT_EQ(s.read.size(), words * 8) << rf;
    EXPECT_EQ(s.cgroup, 0xc6u) << rf;
    // One word short is DataLoss.
    spec.read_values.pop_back();
    spec.cgroup = 0;
    a.sample_type &= ~kSampleCgroup;
    EXPECT_TRUE(absl::IsDataLoss(ParseSample(Kept(SampleRecord(a, spec)), a, s))) << rf;
  }
}

TEST(ParseSample, ReadGroupCountIsBounded) {
  EventAttr a;
  a.sample_type = kSampleRead;
  a.read_format = kReadGroup;
  SampleSpec spec;
  spec.read_values = {kMaxReadGroupEntries + 1};
  Sample s;
  EXPECT_TRUE(absl::IsDataLoss(ParseSample(Kept(SampleRecord(a, spec)), a, s)));
}

TEST(ParseSample, CallchainDepthIsBounded) {
  EventAttr a;
  a.sample_type = kSampleCallchain;
  Bytes8 b;
  b.U64(kMaxCallchainDepth + 1);
  Sample s;
  absl::Status st = ParseSample(Kept(Record(kRecordSample, 0, b.bytes())), a, s);
  EXPECT_TRUE(absl::IsDataLoss(st)) << st;
  // A count whose byte size would overflow is refused too.
  Bytes8 huge;
  huge.U64(~uint64_t{0} / 4);
  EXPECT_TRUE(absl::IsDataLoss(ParseSample(Kept(Record(kRecordSample, 0, huge.bytes())), a, s)));
}

TEST(ParseSample, StackUserLimitsAndDynSize) {
  EventAttr a;
  a.sample_type = kSampleStackUser;
  Sample s;
  Bytes8 big;
  big.U64(kMaxStackUserBytes + 8);
  EXPECT_TRUE(absl::IsDataLoss(ParseSample(Kept(Record(kRecordSample, 0, big.bytes())), a, s)));
  SampleSpec spec;
  spec.stack = std::vector<uint8_t>(16, 1);
  spec.dyn_size = 17;  // more than the copy: perf's "user stack dump failure"
  EXPECT_TRUE(absl::IsDataLoss(ParseSample(Kept(SampleRecord(a, spec)), a, s)));
  spec.stack.clear();  // size 0: no data, no dyn_size
  ASSERT_TRUE(ParseSample(Kept(SampleRecord(a, spec)), a, s).ok());
  EXPECT_TRUE(s.valid_stack().empty());
}

TEST(ParseSample, NoRegistersForAbiNone) {
  EventAttr a;
  a.sample_type = kSampleRegsUser | kSamplePeriod;
  a.sample_regs_user = 0xff;
  SampleSpec spec;
  spec.regs_abi = kRegsAbiNone;
  spec.period = 5;
  Sample s;
  ASSERT_TRUE(ParseSample(Kept(SampleRecord(a, spec)), a, s).ok());
  EXPECT_TRUE(s.regs_user.empty());
  // PERIOD comes before REGS_USER; nothing follows: the record ends there.
  EXPECT_EQ(s.period, 5u);
}

// perf record -c N: no PERIOD field, and every sample's period is the
// attr's, as perf script prints it; a PERIOD field wins over it.
TEST(ParseSample, PeriodFromTheAttrWithoutAPeriodField) {
  EventAttr a;
  a.sample_type = kSampleIp;
  a.sample_period = 250000;
  SampleSpec spec;
  spec.ip = 0x401000;
  Sample s;
  ASSERT_TRUE(ParseSample(Kept(SampleRecord(a, spec)), a, s).ok());
  EXPECT_EQ(s.period, 250000u);
  a.sample_type |= kSamplePeriod;
  spec.period = 7;
  ASSERT_TRUE(ParseSample(Kept(SampleRecord(a, spec)), a, s).ok());
  EXPECT_EQ(s.period, 7u);
}

TEST(ParseSample, BranchStackBoundsAndCounters) {
  EventAttr a;
  a.sample_type = kSampleBranchStack | kSampleCgroup;
  a.branch_sample_type = kBranchCounters;
  Bytes8 b;
  b.U64(1);
  for (int i = 0; i < 3; ++i) b.U64(i);  // one entry
  b.U64(0x77);                           // its counter
  b.U64(0xc0);                           // cgroup
  Sample s;
  ASSERT_TRUE(ParseSample(Kept(Record(kRecordSample, 0, b.bytes())), a, s).ok());
  EXPECT_EQ(s.cgroup, 0xc0u);
  Bytes8 many;
  many.U64(kMaxBranchEntries + 1);
  EXPECT_TRUE(absl::IsDataLoss(ParseSample(Kept(Record(kRecordSample, 0, many.bytes())), a, s)));
}

TEST(ParseEventAttr, EveryPublishedSize) {
  EventAttr in = testing::DwarfCallGraphAttr();
  in.branch_sample_type = 0x55;
  in.sample_regs_intr = 0x66;
  for (uint32_t size : {kAttrSizeVer0, kAttrSizeVer1, kAttrSizeVer2, kAttrSizeVer3,
                        kAttrSizeVer4, kAttrSizeVer5, kAttrSizeVer6, kAttrSizeVer7,
                        kAttrSizeVer8, 200u}) {
    EventAttr out;
    ASSERT_TRUE(ParseEventAttr(AttrBytes(in, size), out).ok()) << size;
    EXPECT_EQ(out.sample_type, in.sample_type) << size;
    EXPECT_EQ(out.flags, in.flags);
    EXPECT_TRUE(out.sample_id_all());
    EXPECT_EQ(out.branch_sample_type, size >= kAttrSizeVer2 ? 0x55u : 0u) << size;
    EXPECT_EQ(out.sample_regs_user, size >= kAttrSizeVer3 ? 0xff0fffu : 0u) << size;
    EXPECT_EQ(out.sample_stack_user, size >= kAttrSizeVer3 ? 8192u : 0u) << size;
    EXPECT_EQ(out.sample_regs_intr, size >= kAttrSizeVer4 ? 0x66u : 0u) << size;
    EXPECT_EQ(out.name, "cpu-clock");
  }
  EventAttr out;
  EXPECT_TRUE(absl::IsDataLoss(ParseEventAttr(AttrBytes(in, 63), out)));
}

TEST(SampleIdTrailer, ReadFromTheEnd) {
  EventAttr a;
  a.flags = kAttrFlagSampleIdAll;
  a.sample_type = kSampleTid | kSampleTime | kSampleId | kSampleCpu | kSampleIdentifier;
  std::vector<uint8_t> rec = testing::CommRecord(a, 5, 6, "x", false, 999);
  SampleId id;
  ASSERT_TRUE(ParseSampleIdTrailer(rec, a.sample_type, id).ok());
  EXPECT_EQ(id.pid, 5u);
  EXPECT_EQ(id.tid, 6u);
  EXPECT_EQ(id.time, 999u);
  EXPECT_EQ(SampleIdSize(a.sample_type), 40u);
  std::vector<uint8_t> tiny = Record(kRecordComm, 0, {});
  EXPECT_TRUE(absl::IsDataLoss(ParseSampleIdTrailer(tiny, a.sample_type, id)));
}

TEST(NonSampleRecords, Decode) {
  const EventAttr a = testing::DwarfCallGraphAttr();
  const uint64_t trailer = SampleIdSize(a.sample_type);
  MmapEvent m;
  ASSERT_TRUE(ParseMmap2(Kept(testing::Mmap2Record(a, 1, 2, 0x1000, 0x2000, 0x3000, 5,
                                              "/lib/x.so", 7, {}, 42)),
                         trailer, m)
                  .ok());
  EXPECT_EQ(m.start, 0x1000u);
  EXPECT_EQ(m.len, 0x2000u);
  EXPECT_EQ(m.pgoff, 0x3000u);
  EXPECT_EQ(m.prot, 5u);
  EXPECT_EQ(m.ino, 42u);
  EXPECT_EQ(m.maj, 254u);
  EXPECT_EQ(m.filename, "/lib/x.so");
  EXPECT_TRUE(m.build_id.empty());

  ASSERT_TRUE(ParseMmap2(Kept(testing::Mmap2Record(a, 1, 2, 0x1000, 0x2000, 0, 5, "/b",
                                              7, {0xab, 0xcd, 0xef})),
                         trailer, m)
                  .ok());
  EXPECT_EQ(HexString(m.build_id.span()), "abcdef");
  EXPECT_EQ(m.ino, 0u);

  ASSERT_TRUE(ParseMmap(Kept(testing::MmapRecord(a, 1, 2, 0x5000, 0x1000, 0, "/c", 8,
                                            /*data=*/true)),
                        trailer, m)
                  .ok());
  EXPECT_EQ(m.prot, 1u);  // data: not executable
  EXPECT_EQ(m.filename, "/c");

  CommEvent c;
  ASSERT_TRUE(ParseComm(Kept(testing::CommRecord(a, 3, 4, "worker", true, 9)), trailer, c).ok());
  EXPECT_TRUE(c.exec);
  EXPECT_EQ(c.comm, "worker");

  TaskEvent t;
  ASSERT_TRUE(ParseTask(Kept(testing::TaskRecord(a, kRecordFork, 3, 1, 4, 1, 10)), trailer, t).ok());
  EXPECT_EQ(t.pid, 3u);
  EXPECT_EQ(t.ppid, 1u);
  EXPECT_EQ(t.tid, 4u);
  EXPECT_EQ(t.ptid, 1u);
  EXPECT_EQ(t.time, 10u);

  Bytes8 lost;
  lost.U64(8).U64(100);
  LostEvent l;
  ASSERT_TRUE(ParseLost(Kept(Record(kRecordLost, 0, lost.bytes())), 0, l).ok());
  EXPECT_EQ(l.lost, 100u);
  Bytes8 thr;
  thr.U64(1).U64(2).U64(3);
  ThrottleEvent th;
  ASSERT_TRUE(ParseThrottle(Kept(Record(kRecordThrottle, 0, thr.bytes())), 0, th).ok());
  EXPECT_EQ(th.stream_id, 3u);
}

TEST(NonSampleRecords, LyingSizesAreDataLoss) {
  const EventAttr a = testing::DwarfCallGraphAttr();
  const uint64_t trailer = SampleIdSize(a.sample_type);
  std::vector<uint8_t> mmap2 =
      testing::Mmap2Record(a, 1, 2, 0x1000, 0x2000, 0, 5, "/x", 7, {});
  MmapEvent m;
  for (size_t n = 0; n < 8 + 64 + trailer; ++n) {
    std::vector<uint8_t> cut(mmap2.begin(), mmap2.begin() + n);
    EXPECT_FALSE(ParseMmap2(cut, trailer, m).ok()) << n;
  }
  // A trailer larger than the record.
  EXPECT_TRUE(absl::IsDataLoss(ParseMmap2(mmap2, 1 << 20, m)));
  // An MMAP2 build-id of more than 20 bytes.
  std::vector<uint8_t> bad = testing::Mmap2Record(a, 1, 2, 0x1000, 0x2000, 0, 5, "/x",
                                                  7, std::vector<uint8_t>(20, 1));
  bad[8 + 32] = 21;
  EXPECT_TRUE(absl::IsDataLoss(ParseMmap2(bad, trailer, m)));
  TaskEvent t;
  EXPECT_TRUE(absl::IsDataLoss(ParseTask(Kept(Record(kRecordFork, 0, {})), 0, t)));
  CommEvent c;
  EXPECT_TRUE(absl::IsDataLoss(ParseComm(Kept(Record(kRecordComm, 0, {})), 0, c)));
}

TEST(BuildIdEvent, SizedAndUnsized) {
  std::vector<uint8_t> id(20);
  for (int i = 0; i < 20; ++i) id[i] = i;
  BuildIdEntry e;
  ASSERT_TRUE(ParseBuildIdEvent(testing::BuildIdEvent(0, kMiscUser, -1, id, "/lib/a"), e).ok());
  EXPECT_EQ(e.build_id, "000102030405060708090a0b0c0d0e0f10111213");
  EXPECT_EQ(e.filename, "/lib/a");
  EXPECT_EQ(e.pid, -1);
  std::vector<uint8_t> md5(id.begin(), id.begin() + 16);
  ASSERT_TRUE(ParseBuildIdEvent(
                  testing::BuildIdEvent(0, kMiscUser | kMiscBuildIdSize, 1, md5, "/b"), e)
                  .ok());
  EXPECT_EQ(e.build_id, "000102030405060708090a0b0c0d0e0f");
  std::vector<uint8_t> bad = testing::BuildIdEvent(0, kMiscUser | kMiscBuildIdSize, 1, md5, "/b");
  bad[12 + 20] = 200;
  EXPECT_TRUE(absl::IsDataLoss(ParseBuildIdEvent(bad, e)));
  EXPECT_TRUE(absl::IsDataLoss(ParseBuildIdEvent(Kept(Record(0, 0, {})), e)));
}

TEST(AttrSet, MatchesRecordsByIdLikePerf) {
  EventAttr a = testing::DwarfCallGraphAttr();
  a.sample_type |= kSampleId;
  a.ids = {100, 101};
  EventAttr b = a;
  b.config = 9;
  b.ids = {200};
  AttrSet set;
  ASSERT_TRUE(set.Add(a).ok());
  ASSERT_TRUE(set.Add(b).ok());
  EXPECT_TRUE(set.IdPositionsAgree());
  SampleSpec s;
  s.id = 200;
  EXPECT_EQ(set.ForRecord(kRecordSample, SampleRecord(b, s)), 1);
  s.id = 101;
  EXPECT_EQ(set.ForRecord(kRecordSample, SampleRecord(a, s)), 0);
  s.id = 999;
  EXPECT_EQ(set.ForRecord(kRecordSample, SampleRecord(a, s)), -1);
  s.id = 0;  // perf's synthesized records
  EXPECT_EQ(set.ForRecord(kRecordSample, SampleRecord(a, s)), 0);
  // Non-sample records: the id in the sample_id trailer.
  Bytes8 body;
  body.U32(1).U32(1).Str("c").Raw(testing::SampleIdTrailer(b, 1, 1, 5, 200));
  EXPECT_EQ(set.ForRecord(kRecordComm, Record(kRecordComm, 0, body.bytes())), 1);
  // IDENTIFIER: always the first u64 of a sample.
  EventAttr c = a;
  c.sample_type = kSampleIdentifier | kSampleIp | kSampleTime;
  c.ids = {300};
  AttrSet set2;
  ASSERT_TRUE(set2.Add(a).ok());
  ASSERT_TRUE(set2.Add(c).ok());
  EXPECT_FALSE(set2.IdPositionsAgree());
  EXPECT_EQ(set.ForRecord(kRecordSample, Record(kRecordSample, 0, {})), -1);
}

TEST(AttrSet, Bounded) {
  AttrSet set;
  for (size_t i = 0; i < AttrSet::kMaxAttrs; ++i) ASSERT_TRUE(set.Add(EventAttr{}).ok());
  EXPECT_TRUE(absl::IsInvalidArgument(set.Add(EventAttr{})));
  AttrSet ids;
  ASSERT_TRUE(ids.Add(EventAttr{}).ok());
  for (size_t i = 0; i < AttrSet::kMaxIds; ++i) ASSERT_TRUE(ids.AddId(0, i + 1).ok());
  EXPECT_TRUE(absl::IsInvalidArgument(ids.AddId(0, 1)));
}

}  // namespace
}  // namespace unwindd::proc::perf
