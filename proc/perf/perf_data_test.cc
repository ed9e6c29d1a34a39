// PerfDataReader over hand-built files and streams: both formats, time
// ordering with perf's FINISHED_ROUND semantics, features, and malformed
// variants of every structure (truncations, lying sizes, huge counts,
// zero-size records), none of which may crash, hang or allocate without
// bound.
#include "proc/perf/perf_data.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "proc/perf/sparse_reader.h"
#include "proc/perf/testing/perf_data_writer.h"

namespace unwindd::proc::perf {
namespace {

using testing::Bytes8;
using testing::PerfDataWriter;
using testing::Record;
using testing::SampleSpec;

class Collect : public EventHandler {
 public:
  absl::Status OnEvent(const Event& e) override {
    types.push_back(e.type);
    times.push_back(e.id.time);
    if (e.type == kRecordSample) {
      ips.push_back(e.sample.ip);
      attr_indexes.push_back(e.attr_index);
    }
    if (e.type == kRecordMmap2) files.emplace_back(e.mmap.filename);
    return absl::OkStatus();
  }
  std::vector<uint32_t> types;
  std::vector<uint64_t> times;
  std::vector<uint64_t> ips;
  std::vector<int> attr_indexes;
  std::vector<std::string> files;
};

std::vector<uint8_t> Sample(const EventAttr& a, uint64_t time, uint64_t ip) {
  SampleSpec s;
  s.pid = s.tid = 1;
  s.time = time;
  s.ip = ip;
  return testing::SampleRecord(a, s);
}

// Two rounds, out of order inside each, as perf record writes per-CPU
// buffers one after the other.
PerfDataWriter TwoRounds() {
  PerfDataWriter w;
  EventAttr a = testing::DwarfCallGraphAttr();
  a.ids = {1, 2};
  w.AddAttr(a);
  w.Add(testing::CommRecord(a, 1, 1, "prog", true, 5));
  w.Add(Sample(a, 30, 0x30));
  w.Add(testing::Mmap2Record(a, 1, 1, 0x1000, 0x1000, 0, 5, "/bin/prog", 8));
  w.Add(Sample(a, 10, 0x10));
  w.Add(testing::FinishedRound());
  w.Add(Sample(a, 40, 0x40));
  w.Add(Sample(a, 20, 0x20));
  w.Add(testing::FinishedRound());
  w.Add(Sample(a, 35, 0x35));
  w.AddFeature(kFeatArch, testing::FeatureString("x86_64"));
  w.AddFeature(kFeatHostname, testing::FeatureString("host1"));
  w.AddFeature(kFeatOsRelease, testing::FeatureString("6.1.0"));
  Bytes8 cmd;
  cmd.U32(2).Raw(testing::FeatureString("perf")).Raw(testing::FeatureString("record"));
  w.AddFeature(kFeatCmdline, cmd.bytes());
  std::vector<uint8_t> id(20, 0x11);
  Bytes8 ids;
  ids.Raw(testing::BuildIdEvent(0, kMiscUser, -1, id, "/bin/prog"));
  ids.Raw(testing::BuildIdEvent(0, kMiscKernel, -1, id, "[kernel.kallsyms]"));
  w.AddFeature(kFeatBuildId, ids.bytes());
  return w;
}

void ExpectTwoRoundsOrder(const Collect& c) {
  EXPECT_EQ(c.ips, (std::vector<uint64_t>{0x10, 0x20, 0x30, 0x35, 0x40}));
  // COMM (5) and MMAP2 (8) come before the first sample (10).
  ASSERT_GE(c.types.size(), 2u);
  EXPECT_EQ(c.types[0], kRecordComm);
  EXPECT_EQ(c.types[1], kRecordMmap2);
  for (size_t i = 1; i < c.times.size(); ++i) EXPECT_LE(c.times[i - 1], c.times[i]);
}

TEST(PerfDataReader, FileModeInTimeOrderWithFeatures) {
  std::vector<uint8_t> bytes = TwoRounds().FileBytes();
  auto r = PerfDataReader::OpenBuffer(bytes);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE((*r)->pipe_mode());
  Collect c;
  ASSERT_TRUE((*r)->Read(c).ok());
  ExpectTwoRoundsOrder(c);
  EXPECT_EQ((*r)->info().arch, "x86_64");
  EXPECT_EQ((*r)->info().hostname, "host1");
  EXPECT_EQ((*r)->info().os_release, "6.1.0");
  EXPECT_EQ((*r)->info().cmdline, (std::vector<std::string>{"perf", "record"}));
  ASSERT_EQ((*r)->info().build_ids.size(), 2u);
  EXPECT_EQ((*r)->info().build_ids[0].filename, "/bin/prog");
  EXPECT_EQ((*r)->info().build_ids[0].build_id, std::string(40, '1'));
  EXPECT_EQ((*r)->attrs().size(), 1u);
  EXPECT_EQ((*r)->attrs().at(0).ids, (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ((*r)->stats().samples, 5u);
  EXPECT_EQ((*r)->stats().rounds, 2u);
  EXPECT_EQ((*r)->stats().out_of_order, 0u);
  EXPECT_EQ((*r)->warnings().count(), 0u);
  EXPECT_FALSE((*r)->Read(c).ok()) << "Read twice";
}

std::string WriteTemp(const std::vector<uint8_t>& bytes, const std::string& name) {
  const std::string path = ::testing::TempDir() + "/" + name;
  FILE* f = fopen(path.c_str(), "wb");
  fwrite(bytes.data(), 1, bytes.size(), f);
  fclose(f);
  return path;
}

TEST(PerfDataReader, FilesMappedOrRead) {
  for (bool pipe : {false, true}) {
    const std::vector<uint8_t> bytes = pipe ? TwoRounds().PipeBytes() : TwoRounds().FileBytes();
    const std::string path = WriteTemp(bytes, pipe ? "two_rounds_pipe.data" : "two_rounds.data");
    for (FileAccess access : {FileAccess::kMap, FileAccess::kRead, FileAccess::kSparse}) {
      auto r = PerfDataReader::OpenFile(path, {}, access);
      ASSERT_TRUE(r.ok()) << r.status();
      EXPECT_EQ((*r)->pipe_mode(), pipe);
      Collect c;
      ASSERT_TRUE((*r)->Read(c).ok());
      ExpectTwoRoundsOrder(c);
      EXPECT_EQ((*r)->info().arch, "x86_64");
      EXPECT_EQ((*r)->info().build_ids.size(), 2u);
    }
  }
  EXPECT_TRUE(absl::IsNotFound(PerfDataReader::OpenFile("/no/such/perf.data").status()));
  EXPECT_TRUE(absl::IsDataLoss(
      PerfDataReader::OpenFile(WriteTemp({}, "empty.data")).status()));
}

TEST(PerfDataReader, ReadFileThatShrinksIsDataLossNotSigbus) {
  PerfDataWriter w;
  EventAttr a = testing::DwarfCallGraphAttr();
  w.AddAttr(a);
  for (uint64_t t = 1; t <= 30000; ++t) w.Add(Sample(a, t, t));  // > 2 windows
  const std::vector<uint8_t> bytes = w.FileBytes();
  ASSERT_GT(bytes.size(), size_t{2} << 20);
  for (FileAccess access : {FileAccess::kRead, FileAccess::kSparse}) {
    const std::string path = WriteTemp(bytes, "shrinks.data");
    auto r = PerfDataReader::OpenFile(path, {}, access);
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(truncate(path.c_str(), 1 << 20), 0);
    Collect c;
    absl::Status st = (*r)->Read(c);
    EXPECT_TRUE(absl::IsDataLoss(st)) << st;
    EXPECT_GT(c.ips.size(), 0u);
    EXPECT_LT(c.ips.size(), 30000u);
  }
}

// What kSparse leaves in the file: each sample's stack copy, at the offset
// it says, byte for byte; the other fields are decoded as from the whole
// record. Copies below kMinLeftBytes come in the record as always, and so
// does a sample whose fields before the copy are long (a deep kernel
// callchain needs a second, longer probe).
TEST(PerfDataReader, SparseReadsLeaveStackCopiesInTheFile) {
  PerfDataWriter w;
  EventAttr a = testing::DwarfCallGraphAttr();
  w.AddAttr(a);
  std::vector<SampleSpec> specs;
  for (uint64_t i = 0; i < 400; ++i) {
    SampleSpec s;
    s.pid = s.tid = 1 + i % 3;
    s.time = 10 + i;
    s.ip = 0x1000 + i;
    const size_t n = i % 5 == 0 ? 1024 : 4096 + 1000 * (i % 7);  // some under kMinLeftBytes
    s.stack.resize(n);
    for (size_t b = 0; b < n; ++b) s.stack[b] = static_cast<uint8_t>(i * 31 + b);
    s.dyn_size = n - (i % 4) * 8;
    if (i % 11 == 0) s.callchain.assign(600, 0xffffffff81000000 + i);  // fields > 4 KiB
    specs.push_back(s);
    w.Add(testing::SampleRecord(a, s));
    if (i % 50 == 49) w.Add(testing::FinishedRound());
  }
  const std::string path = WriteTemp(w.FileBytes(), "sparse.data");
  class Check : public EventHandler {
   public:
    Check(int fd, const std::vector<SampleSpec>& specs) : fd_(fd), specs_(specs) {}
    absl::Status OnEvent(const Event& e) override {
      if (e.type != kRecordSample) return absl::OkStatus();
      const SampleSpec& want = specs_.at(n_++);
      EXPECT_EQ(e.sample.ip, want.ip);
      EXPECT_EQ(e.sample.callchain.size(), want.callchain.size());
      EXPECT_EQ(e.sample.stack_user_size, want.stack.size());
      EXPECT_EQ(e.sample.stack_user_dyn_size, want.dyn_size);
      EXPECT_EQ(e.sample.valid_stack_size(), want.dyn_size);
      std::vector<uint8_t> got(e.sample.stack_user_size);
      if (want.stack.size() < kMinLeftBytes) {
        EXPECT_EQ(e.sample.stack_file_offset, 0u) << "sample " << n_;
        got.assign(e.sample.stack_user.span().begin(), e.sample.stack_user.span().end());
      } else {
        EXPECT_NE(e.sample.stack_file_offset, 0u) << "sample " << n_;
        EXPECT_TRUE(e.sample.stack_user.span().empty());
        EXPECT_EQ(pread(fd_, got.data(), got.size(), e.sample.stack_file_offset),
                  static_cast<ssize_t>(got.size()));
        ++left_;
      }
      EXPECT_EQ(got, want.stack) << "sample " << n_;
      return absl::OkStatus();
    }
    int n_ = 0;
    int left_ = 0;

   private:
    int fd_;
    const std::vector<SampleSpec>& specs_;
  };
  auto r = PerfDataReader::OpenFile(path, {}, FileAccess::kSparse);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_GE((*r)->stack_file(), 0);
  Check c((*r)->stack_file(), specs);
  ASSERT_TRUE((*r)->Read(c).ok());
  EXPECT_EQ(c.n_, 400);
  EXPECT_EQ(c.left_, 320);
  EXPECT_EQ((*r)->warnings().count(), 0u);
  // Other readers leave nothing in the file.
  auto whole = PerfDataReader::OpenFile(path, {}, FileAccess::kRead);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ((*whole)->stack_file(), -1);
}

// A file that ends inside a sample's last fields, after its copy: the
// samples before it, and a warning (as every reader does).
TEST(PerfDataReader, SparseReadOfATruncatedSample) {
  PerfDataWriter w;
  EventAttr a = testing::DwarfCallGraphAttr();
  w.AddAttr(a);
  for (uint64_t t = 1; t <= 3; ++t) {
    SampleSpec s;
    s.pid = s.tid = 1;
    s.time = t;
    s.ip = t;
    s.stack.assign(8192, 0x5a);
    s.dyn_size = 8192;
    w.Add(testing::SampleRecord(a, s));
  }
  std::vector<uint8_t> bytes = w.FileBytes();
  // Cut the data section 4 bytes into the last sample's dyn_size (the file
  // header's data size still says more).
  const std::string path = WriteTemp(bytes, "sparse_cut.data");
  for (FileAccess access : {FileAccess::kRead, FileAccess::kSparse}) {
    auto r = PerfDataReader::OpenFile(path, {}, access);
    ASSERT_TRUE(r.ok());
    const FileHeader h = (*r)->file_header();
    const uint64_t cut = h.data.offset + h.data.size - 4;
    ASSERT_EQ(truncate(path.c_str(), static_cast<off_t>(cut)), 0);
    Collect c;
    absl::Status st = (*r)->Read(c);
    EXPECT_EQ(c.ips, (std::vector<uint64_t>{1, 2})) << st;
    ASSERT_TRUE(WriteTemp(bytes, "sparse_cut.data") == path);
  }
}

// AUXTRACE payloads (trace data after the record, not records) are gone
// past, in a file read ahead in chunks as in a mapped one: one inside what
// was read, one larger than several chunks (moved past without reading),
// and the records after each come whole and in order.
TEST(PerfDataReader, PayloadsAreSkippedInFilesReadAhead) {
  PerfDataWriter w;
  EventAttr a = testing::DwarfCallGraphAttr();
  w.AddAttr(a);
  auto auxtrace = [](uint64_t size) {
    Bytes8 body;
    body.U64(size).U64(0).U64(0).U32(0).U32(1).U32(0).U32(0);
    std::vector<uint8_t> rec = Record(kRecordAuxtrace, 0, body.bytes());
    rec.resize(rec.size() + size, 0xa5);
    return rec;
  };
  std::vector<uint64_t> want;
  uint64_t t = 1;
  for (uint64_t payload : {uint64_t{4096}, uint64_t{5} << 20, uint64_t{64}, uint64_t{3} << 20}) {
    for (int i = 0; i < 300; ++i, ++t) {
      w.Add(Sample(a, t, t));
      want.push_back(t);
    }
    w.Add(auxtrace(payload));
  }
  w.Add(Sample(a, t, t));
  want.push_back(t);
  const std::string path = WriteTemp(w.FileBytes(), "auxtrace.data");
  for (FileAccess access : {FileAccess::kMap, FileAccess::kRead, FileAccess::kSparse}) {
    auto r = PerfDataReader::OpenFile(path, {}, access);
    ASSERT_TRUE(r.ok()) << r.status();
    Collect c;
    absl::Status st = (*r)->Read(c);
    ASSERT_TRUE(st.ok()) << st;
    EXPECT_EQ(c.ips, want);
  }
  // A payload that runs past the end of the file is DataLoss.
  PerfDataWriter cut;
  cut.AddAttr(a);
  cut.Add(Sample(a, 1, 1));
  std::vector<uint8_t> rec = auxtrace(uint64_t{4} << 20);
  rec.resize(rec.size() - 8);
  cut.Add(rec);
  auto r = PerfDataReader::OpenFile(WriteTemp(cut.FileBytes(), "auxtrace_cut.data"), {},
                                    FileAccess::kRead);
  ASSERT_TRUE(r.ok()) << r.status();
  Collect c;
  EXPECT_TRUE(absl::IsDataLoss((*r)->Read(c)));
}

// Records read into chunks (kRead, the CLI's way, and streams) can be
// kept past OnEvent by holding Event::keep, without a copy: after the
// whole file is read, every held record still has the file's bytes, in
// time order, across many 2 MiB chunks. Past max_held_bytes, records come
// without a chunk to hold (the consumer copies), and the chunks held stop
// growing.
class Keep : public EventHandler {
 public:
  absl::Status OnEvent(const Event& e) override {
    if (e.type != kRecordSample) return absl::OkStatus();
    if (e.keep == nullptr) {
      ++unheld;
      return absl::OkStatus();
    }
    held.push_back({*e.keep, e.record, e.offset, e.sample.ip});
    return absl::OkStatus();
  }
  struct Held {
    std::shared_ptr<const void> keep;
    absl::Span<const uint8_t> record;
    uint64_t offset;
    uint64_t ip;
  };
  std::vector<Held> held;
  int unheld = 0;
};

TEST(PerfDataReader, ReadRecordsAreHeldNotCopied) {
  PerfDataWriter w;
  EventAttr a = testing::DwarfCallGraphAttr();
  w.AddAttr(a);
  // Two CPUs' buffers, one after the other in each round: out of order.
  auto sample = [&](uint64_t time, uint64_t ip) {
    SampleSpec s;
    s.pid = s.tid = 1;
    s.time = time;
    s.ip = ip;
    s.stack.assign(256, static_cast<uint8_t>(time));  // as perf's, only shorter
    s.dyn_size = s.stack.size();
    return testing::SampleRecord(a, s);
  };
  for (uint64_t round = 0; round < 40; ++round) {
    for (uint64_t i = 0; i < 500; ++i) w.Add(sample(round * 1000 + 2 * i + 1, 1));
    for (uint64_t i = 0; i < 500; ++i) w.Add(sample(round * 1000 + 2 * i, 0));
    w.Add(testing::FinishedRound());
  }
  for (bool pipe : {false, true}) {
    const std::vector<uint8_t> bytes = pipe ? w.PipeBytes() : w.FileBytes();
    ASSERT_GT(bytes.size(), size_t{8} << 20);
    const std::string path = WriteTemp(bytes, "held.data");
    auto r = PerfDataReader::OpenFile(path, {}, FileAccess::kRead);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_FALSE((*r)->records_outlive_delivery());
    Keep k;
    ASSERT_TRUE((*r)->Read(k).ok());
    r->reset();  // the reader is gone; the chunks are not
    ASSERT_EQ(k.held.size(), 40000u);
    EXPECT_EQ(k.unheld, 0);
    for (size_t i = 0; i < k.held.size(); ++i) {
      const Keep::Held& h = k.held[i];
      ASSERT_EQ(h.ip, i % 2) << i;  // time order: even, odd, even...
      ASSERT_LE(h.offset + h.record.size(), bytes.size());
      ASSERT_EQ(std::memcmp(h.record.data(), bytes.data() + h.offset, h.record.size()), 0)
          << "record " << i << " at 0x" << std::hex << h.offset;
    }
  }
  // Holding everything, with a budget of 4 MiB: past it, records come
  // without a chunk.
  const std::string path = WriteTemp(w.FileBytes(), "held_budget.data");
  Limits l;
  l.max_held_bytes = 4 << 20;
  auto r = PerfDataReader::OpenFile(path, l);
  ASSERT_TRUE(r.ok()) << r.status();
  Keep k;
  ASSERT_TRUE((*r)->Read(k).ok());
  EXPECT_GT(k.unheld, 0);
  EXPECT_GT(k.held.size(), 0u);
  std::set<const void*> chunks;
  for (const Keep::Held& h : k.held) chunks.insert(h.keep.get());
  EXPECT_LE(chunks.size(), 3u);  // 4 MiB of 2 MiB chunks, and the one past it
}

// The same with the file mapped (the CLI's way): the pages past the new
// end read as zeros instead of raising SIGBUS, and the next record is
// DataLoss (issue 14, file races).
TEST(PerfDataReader, MappedFileThatShrinksIsDataLossNotSigbus) {
  PerfDataWriter w;
  EventAttr a = testing::DwarfCallGraphAttr();
  w.AddAttr(a);
  for (uint64_t t = 1; t <= 30000; ++t) w.Add(Sample(a, t, t));
  const std::vector<uint8_t> bytes = w.FileBytes();
  const std::string path = WriteTemp(bytes, "shrinks_mapped.data");
  auto r = PerfDataReader::OpenFile(path, {}, FileAccess::kMap);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(truncate(path.c_str(), 1 << 20), 0);
  Collect c;
  absl::Status st = (*r)->Read(c);
  EXPECT_TRUE(absl::IsDataLoss(st)) << st;
  EXPECT_NE(st.message().find("changed while it was read"), absl::string_view::npos) << st;
  EXPECT_GT(c.ips.size(), 0u);
  EXPECT_LT(c.ips.size(), 30000u);
}

TEST(PerfDataReader, PipeModeFromBufferAndStream) {
  std::vector<uint8_t> bytes = TwoRounds().PipeBytes();
  auto r = PerfDataReader::OpenBuffer(bytes);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE((*r)->pipe_mode());
  Collect c;
  ASSERT_TRUE((*r)->Read(c).ok());
  ExpectTwoRoundsOrder(c);
  EXPECT_EQ((*r)->info().arch, "x86_64");
  EXPECT_EQ((*r)->info().build_ids.size(), 2u);  // HEADER_FEATURE BUILD_ID

  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  std::thread writer([&] {
    size_t done = 0;
    while (done < bytes.size()) {
      // Small writes: the reader must reassemble records across reads.
      ssize_t n = write(fds[1], bytes.data() + done, std::min<size_t>(7, bytes.size() - done));
      if (n <= 0) break;
      done += n;
    }
    close(fds[1]);
  });
  auto s = PerfDataReader::OpenStream(memory::ScopedFd(fds[0]));
  ASSERT_TRUE(s.ok()) << s.status();
  Collect cs;
  ASSERT_TRUE((*s)->Read(cs).ok());
  writer.join();
  EXPECT_EQ(cs.ips, c.ips);
  EXPECT_EQ(cs.types, c.types);
}

TEST(PerfDataReader, StreamRefusesFileFormat) {
  std::vector<uint8_t> bytes = TwoRounds().FileBytes();
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  ASSERT_EQ(write(fds[1], bytes.data(), 64), 64);
  close(fds[1]);
  auto s = PerfDataReader::OpenStream(memory::ScopedFd(fds[0]));
  EXPECT_TRUE(absl::IsInvalidArgument(s.status())) << s.status();
}

TEST(PerfDataReader, RoundSemanticsAndLateRecords) {
  // perf flushes, at a round's end, only up to the previous round's
  // largest time; a record older than what was delivered comes late.
  PerfDataWriter w;
  EventAttr a = testing::DwarfCallGraphAttr();
  w.AddAttr(a);
  w.Add(Sample(a, 30, 1));
  w.Add(testing::FinishedRound());  // flushes <= 0: nothing
  w.Add(Sample(a, 40, 2));
  w.Add(testing::FinishedRound());  // flushes <= 30: 30
  w.Add(Sample(a, 20, 3));          // older than 30: late
  w.Add(testing::FinishedRound());  // flushes <= 40: 20, 40
  std::vector<uint8_t> bytes = w.FileBytes();
  auto r = PerfDataReader::OpenBuffer(bytes);
  ASSERT_TRUE(r.ok());
  Collect c;
  ASSERT_TRUE((*r)->Read(c).ok());
  EXPECT_EQ(c.ips, (std::vector<uint64_t>{1, 3, 2}));
  EXPECT_EQ((*r)->stats().out_of_order, 1u);
  EXPECT_EQ((*r)->warnings().count(), 1u);
}

TEST(PerfDataReader, MultipleAttrsMatchedById) {
  PerfDataWriter w;
  EventAttr a = testing::DwarfCallGraphAttr();
  a.sample_type |= kSampleIdentifier;
  a.ids = {11};
  EventAttr b = a;
  b.config = 1;  // task-clock
  b.ids = {22};
  w.AddAttr(a, kAttrSizeVer5);  // attrs of two sizes in one file
  w.AddAttr(b, kAttrSizeVer5);
  for (uint64_t id : {22, 11, 33}) {
    SampleSpec s;
    s.id = id;
    s.time = 100 + id;
    s.ip = id;
    w.Add(testing::SampleRecord(a, s));
  }
  std::vector<uint8_t> bytes = w.FileBytes();
  auto r = PerfDataReader::OpenBuffer(bytes);
  ASSERT_TRUE(r.ok()) << r.status();
  Collect c;
  ASSERT_TRUE((*r)->Read(c).ok());
  EXPECT_EQ(c.ips, (std::vector<uint64_t>{11, 22}));
  EXPECT_EQ(c.attr_indexes, (std::vector<int>{0, 1}));
  EXPECT_EQ((*r)->attrs().at(1).name, "task-clock");
  EXPECT_EQ((*r)->stats().skipped, 1u);  // id 33 names no attr
}

TEST(PerfDataReader, PipeUserRecords) {
  PerfDataWriter w;
  EventAttr a = testing::DwarfCallGraphAttr();
  a.ids = {5};
  w.AddAttr(a);
  // HEADER_TRACING_DATA: 16 payload bytes follow the record.
  Bytes8 td;
  td.U32(16).U32(0);
  std::vector<uint8_t> rec = Record(kRecordHeaderTracingData, 0, td.bytes());
  rec.resize(rec.size() + 16, 0xee);
  w.Add(rec);
  // HEADER_BUILD_ID, EVENT_UPDATE (name), FINISHED_INIT, an unknown user
  // type and an unknown kernel type: all skipped by size.
  w.Add(testing::BuildIdEvent(kRecordHeaderBuildId, kMiscUser, 1,
                              std::vector<uint8_t>(20, 0x22), "/lib/z.so"));
  Bytes8 upd;
  upd.U64(kEventUpdateName).U64(5).Str("my-event");
  w.Add(Record(kRecordEventUpdate, 0, upd.bytes()));
  w.Add(Record(kRecordFinishedInit, 0, {}));
  w.Add(Record(99, 0, std::vector<uint8_t>(24, 1)));
  w.Add(Record(40, 0, std::vector<uint8_t>(24, 1)));
  w.Add(Record(kRecordCompressed, 0, std::vector<uint8_t>(8, 1)));
  w.Add(Sample(a, 7, 0x77));
  std::vector<uint8_t> bytes = w.PipeBytes();
  auto r = PerfDataReader::OpenBuffer(bytes);
  ASSERT_TRUE(r.ok());
  Collect c;
  ASSERT_TRUE((*r)->Read(c).ok());
  EXPECT_EQ(c.ips, (std::vector<uint64_t>{0x77}));
  ASSERT_EQ((*r)->info().build_ids.size(), 1u);
  EXPECT_EQ((*r)->info().build_ids[0].filename, "/lib/z.so");
  EXPECT_EQ((*r)->attrs().at(0).name, "my-event");
  EXPECT_EQ((*r)->warnings().count(), 1u);  // the compressed record
  // Kernel type 40 is delivered undecoded, in time order.
  EXPECT_EQ(std::count(c.types.begin(), c.types.end(), 40u), 1);

  // A tracing-data payload larger than the limit is DataLoss; one that
  // runs past the end is DataLoss too.
  Limits small;
  small.max_payload_bytes = 8;
  auto r2 = PerfDataReader::OpenBuffer(bytes, small);
  ASSERT_TRUE(r2.ok());
  EXPECT_TRUE(absl::IsDataLoss((*r2)->Read(c)));
  PerfDataWriter w3;
  w3.AddAttr(a);
  Bytes8 td3;
  td3.U32(1 << 20).U32(0);
  w3.Add(Record(kRecordHeaderTracingData, 0, td3.bytes()));
  std::vector<uint8_t> b3 = w3.PipeBytes();
  auto r3 = PerfDataReader::OpenBuffer(b3);
  ASSERT_TRUE(r3.ok());
  absl::Status st = (*r3)->Read(c);
  EXPECT_TRUE(absl::IsDataLoss(st)) << st;
}

// --- Malformed inputs ---

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
