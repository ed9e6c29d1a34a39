// PerfDataReader over hand-built files and streams: both formats, time
// ordering with perf's FINISHED_ROUND semantics, features, sparse reads,
// payloads and held records. Malformed inputs: perf_data_malformed_test.
#include "proc/perf/perf_data.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <zstd.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"
#include "proc/perf/compressed.h"
#include "proc/perf/sparse_reader.h"
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
  // A directory without `data` is no perf record --threads recording.
  EXPECT_TRUE(absl::IsNotFound(PerfDataReader::OpenFile(::testing::TempDir()).status()));
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
// record. Copies below kMinLeftBytes come in the record as always (read
// ahead, many records a read, across chunk boundaries), and a sample whose
// fields before the copy are long (a deep kernel callchain) needs a second,
// longer probe. Whole and left samples alternate, and runs of each follow
// each other.
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
    // Under kMinLeftBytes: every fifth, and a run of 40 of 8-9 KiB (more
    // than a chunk's worth read ahead); the others are left in the file.
    const size_t n = i % 5 == 0                ? 1024
                     : (i >= 200 && i < 240)   ? 8192 + 13 * i
                                               : kMinLeftBytes + 1000 * (i % 7);
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
  EXPECT_EQ(c.left_, 288);  // 400 less 80 small, less 32 of the run
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
    s.stack.assign(kMinLeftBytes, 0x5a);  // left in the file by kSparse
    s.dyn_size = kMinLeftBytes;
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

// perf record -z: the records zstd-compressed as one stream, flushed into
// PERF_RECORD_COMPRESSED (or COMPRESSED2) records of at most `chunk`
// compressed... here, of `split` input bytes each, which cuts records in
// two; FINISHED_ROUND stays outside, as perf writes it.
class ZstdRecords {
 public:
  explicit ZstdRecords(uint32_t type) : type_(type), ctx_(ZSTD_createCCtx()) {}
  ~ZstdRecords() { ZSTD_freeCCtx(ctx_); }

  // `records` compressed into records of the stream, `split` bytes of
  // input at a time.
  std::vector<std::vector<uint8_t>> Compress(const std::vector<uint8_t>& records, size_t split) {
    std::vector<std::vector<uint8_t>> out;
    for (size_t at = 0; at < records.size(); at += split) {
      const size_t n = std::min(split, records.size() - at);
      std::vector<uint8_t> z(ZSTD_compressBound(n) + 64);
      ZSTD_inBuffer in = {records.data() + at, n, 0};
      ZSTD_outBuffer o = {z.data(), z.size(), 0};
      size_t left;
      do {
        left = ZSTD_compressStream2(ctx_, &o, &in, ZSTD_e_flush);
        EXPECT_FALSE(ZSTD_isError(left));
      } while (left != 0 && !ZSTD_isError(left));
      z.resize(o.pos);
      out.push_back(Wrap(z));
    }
    return out;
  }

  std::vector<uint8_t> Wrap(const std::vector<uint8_t>& z) const {
    if (type_ == kRecordCompressed) return Record(type_, 0, z);
    Bytes8 body;
    body.U64(z.size()).Raw(z).Pad(8);
    return Record(type_, 0, body.bytes());
  }

 private:
  const uint32_t type_;
  ZSTD_CCtx* const ctx_;
};

// TwoRounds' records with each round's records compressed.
PerfDataWriter CompressedTwoRounds(uint32_t type, size_t split) {
  EventAttr a = testing::DwarfCallGraphAttr();
  a.ids = {1, 2};
  PerfDataWriter w;
  w.AddAttr(a);
  ZstdRecords z(type);
  auto add = [&](const std::vector<std::vector<uint8_t>>& records) {
    std::vector<uint8_t> all;
    for (const auto& r : records) all.insert(all.end(), r.begin(), r.end());
    for (auto& c : z.Compress(all, split)) w.Add(std::move(c));
  };
  add({testing::CommRecord(a, 1, 1, "prog", true, 5), Sample(a, 30, 0x30),
       testing::Mmap2Record(a, 1, 1, 0x1000, 0x1000, 0, 5, "/bin/prog", 8),
       Sample(a, 10, 0x10)});
  w.Add(testing::FinishedRound());
  add({Sample(a, 40, 0x40), Sample(a, 20, 0x20)});
  w.Add(testing::FinishedRound());
  add({Sample(a, 35, 0x35)});
  w.AddFeature(kFeatArch, testing::FeatureString("x86_64"));
  return w;
}

TEST(PerfDataReader, CompressedRecordsAsPerfRecordZWritesThem) {
  for (uint32_t type : {kRecordCompressed, kRecordCompressed2}) {
    // Whole records per compressed record, and records cut in two.
    for (size_t split : {size_t{1} << 20, size_t{100}, size_t{7}}) {
      SCOPED_TRACE(absl::StrCat("type ", type, ", split ", split));
      PerfDataWriter w = CompressedTwoRounds(type, split);
      for (bool pipe : {false, true}) {
        const std::vector<uint8_t> bytes = pipe ? w.PipeBytes() : w.FileBytes();
        const std::string path = WriteTemp(bytes, "compressed.data");
        for (FileAccess access : {FileAccess::kMap, FileAccess::kRead, FileAccess::kSparse}) {
          auto r = PerfDataReader::OpenFile(path, {}, access);
          ASSERT_TRUE(r.ok()) << r.status();
          Collect c;
          ASSERT_TRUE((*r)->Read(c).ok());
          ExpectTwoRoundsOrder(c);
          EXPECT_EQ((*r)->warnings().count(), 0u);
          EXPECT_EQ((*r)->stats().samples, 5u);
        }
      }
    }
  }
}

TEST(PerfDataReader, BadCompressedRecordsAreDataLossAfterTheRecordsBefore) {
  EventAttr a = testing::DwarfCallGraphAttr();
  // Samples at 1 and 2 compressed, then a record `bad` of type `type`.
  auto file = [&](std::vector<uint8_t> bad) {
    PerfDataWriter w;
    w.AddAttr(a);
    ZstdRecords z(kRecordCompressed);
    std::vector<uint8_t> two = Sample(a, 1, 0x1);
    const std::vector<uint8_t> second = Sample(a, 2, 0x2);
    two.insert(two.end(), second.begin(), second.end());
    for (auto& c : z.Compress(two, 1 << 20)) w.Add(std::move(c));
    w.Add(std::move(bad));
    return w.FileBytes();
  };
  // Not zstd data.
  const std::vector<uint8_t> junk(64, 0xab);
  // A bomb: 65 MiB of zeros, a few KiB compressed.
  std::vector<uint8_t> zeros(RecordDecompressor::kMaxBytes + (1 << 20), 0);
  std::vector<uint8_t> bomb(ZSTD_compressBound(zeros.size()));
  bomb.resize(ZSTD_compress(bomb.data(), bomb.size(), zeros.data(), zeros.size(), 1));
  ASSERT_LT(bomb.size(), 60000u);
  // A compressed record inside the compressed data.
  ZstdRecords inner(kRecordCompressed);
  const std::vector<uint8_t> nested_record = inner.Compress(Sample(a, 3, 0x3), 1 << 20)[0];
  // COMPRESSED2 whose data_size runs past the record.
  Bytes8 long_size;
  long_size.U64(1000).Raw(junk);
  // The data ends inside a record: a warning, not an error.
  const std::vector<uint8_t> half_sample = Sample(a, 4, 0x4);
  struct Case {
    const char* name;
    std::vector<uint8_t> bad;
    bool error;
  };
  std::vector<Case> cases;
  cases.push_back({"junk", Record(kRecordCompressed, 0, junk), true});
  cases.push_back({"bomb", Record(kRecordCompressed, 0, bomb), true});
  {
    ZstdRecords z(kRecordCompressed);
    // The nested record, compressed again: its decompressed bytes are a
    // COMPRESSED record.
    cases.push_back({"nested", z.Compress(nested_record, 1 << 20)[0], true});
  }
  cases.push_back({"long data_size", Record(kRecordCompressed2, 0, long_size.bytes()), true});
  {
    // Half a sample, as the last compressed bytes of the stream. A fresh
    // stream per file: this is its own file's third compressed record.
    PerfDataWriter w;
    w.AddAttr(a);
    ZstdRecords z(kRecordCompressed);
    std::vector<uint8_t> all = Sample(a, 1, 0x1);
    const std::vector<uint8_t> second = Sample(a, 2, 0x2);
    all.insert(all.end(), second.begin(), second.end());
    all.insert(all.end(), half_sample.begin(), half_sample.begin() + half_sample.size() / 2);
    for (auto& c : z.Compress(all, 1 << 20)) w.Add(std::move(c));
    const std::vector<uint8_t> bytes = w.FileBytes();
    auto r = PerfDataReader::OpenBuffer(bytes);
    ASSERT_TRUE(r.ok()) << r.status();
    Collect c;
    EXPECT_TRUE((*r)->Read(c).ok());
    EXPECT_EQ(c.ips, (std::vector<uint64_t>{0x1, 0x2}));
    EXPECT_EQ((*r)->warnings().count(), 1u);
  }
  for (Case& k : cases) {
    SCOPED_TRACE(k.name);
    const std::vector<uint8_t> bytes = file(k.bad);
    auto r = PerfDataReader::OpenBuffer(bytes);
    ASSERT_TRUE(r.ok()) << r.status();
    Collect c;
    const absl::Status st = (*r)->Read(c);
    EXPECT_TRUE(absl::IsDataLoss(st)) << st;
    EXPECT_EQ(c.ips, (std::vector<uint64_t>{0x1, 0x2})) << "the records before it";
  }
}

// perf record --threads: `data` (the header and the main thread's records)
// and data.N files of bare records, each file in time order, the files
// interleaved in time: delivered as one recording in time order.
TEST(PerfDataReader, DirectoryOfThreadFiles) {
  const std::string dir = ::testing::TempDir() + "/threads.data";
  ASSERT_EQ(system(absl::StrCat("rm -rf '", dir, "' && mkdir '", dir, "'").c_str()), 0);
  EventAttr a = testing::DwarfCallGraphAttr();
  PerfDataWriter w;
  w.AddAttr(a);
  w.Add(testing::CommRecord(a, 1, 1, "prog", true, 5));
  w.AddFeature(kFeatArch, testing::FeatureString("x86_64"));
  WriteTemp(w.FileBytes(), "threads.data/data");
  auto part = [&](std::vector<uint64_t> times, const std::string& name) {
    std::vector<uint8_t> bytes;
    for (uint64_t t : times) {
      const std::vector<uint8_t> r = Sample(a, t, t);
      bytes.insert(bytes.end(), r.begin(), r.end());
    }
    WriteTemp(bytes, "threads.data/" + name);
  };
  part({10, 40, 50}, "data.0");
  part({20, 30, 60}, "data.1");
  part({}, "data.2");
  WriteTemp({1, 2, 3}, "threads.data/other");  // not data.N: not read
  auto r = PerfDataReader::OpenFile(dir, {}, FileAccess::kSparse);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE((*r)->pipe_mode());
  EXPECT_EQ((*r)->info().arch, "x86_64");
  Collect c;
  ASSERT_TRUE((*r)->Read(c).ok());
  EXPECT_EQ(c.ips, (std::vector<uint64_t>{10, 20, 30, 40, 50, 60}));
  ASSERT_FALSE(c.types.empty());
  EXPECT_EQ(c.types[0], kRecordComm);
  // Records of equal time in several files: in the order they were read,
  // and the files are read in the directory's order, as perf reads them
  // (perf_data__open_dir lists them with readdir and does not sort). With
  // 24 files, numeric order and readdir's (a hash's, on ext4) differ.
  const std::string tdir = ::testing::TempDir() + "/ties.data";
  ASSERT_EQ(system(absl::StrCat("rm -rf '", tdir, "' && mkdir '", tdir, "'").c_str()), 0);
  WriteTemp(w.FileBytes(), "ties.data/data");
  for (int n = 0; n < 24; ++n) {
    WriteTemp(Sample(a, 100, 1000 + n), absl::StrCat("ties.data/data.", n));
  }
  std::vector<uint64_t> listed;
  {
    std::unique_ptr<DIR, int (*)(DIR*)> d(opendir(tdir.c_str()), closedir);
    ASSERT_NE(d, nullptr);
    while (const dirent* e = readdir(d.get())) {
      absl::string_view name = e->d_name;
      uint64_t n = 0;
      if (absl::ConsumePrefix(&name, "data.") && absl::SimpleAtoi(name, &n)) {
        listed.push_back(1000 + n);
      }
    }
  }
  auto ties = PerfDataReader::OpenFile(tdir);
  ASSERT_TRUE(ties.ok()) << ties.status();
  Collect ct;
  ASSERT_TRUE((*ties)->Read(ct).ok());
  EXPECT_EQ(ct.ips, listed);

  // perf record --threads -z: each file compressed as a stream of its own.
  const std::string zdir = ::testing::TempDir() + "/threads_z.data";
  ASSERT_EQ(system(absl::StrCat("rm -rf '", zdir, "' && mkdir '", zdir, "'").c_str()), 0);
  WriteTemp(w.FileBytes(), "threads_z.data/data");
  auto zpart = [&](std::vector<uint64_t> times, const std::string& name) {
    std::vector<uint8_t> records;
    for (uint64_t t : times) {
      const std::vector<uint8_t> r = Sample(a, t, t);
      records.insert(records.end(), r.begin(), r.end());
    }
    ZstdRecords z(kRecordCompressed);
    std::vector<uint8_t> bytes;
    for (const std::vector<uint8_t>& c : z.Compress(records, 50)) {
      bytes.insert(bytes.end(), c.begin(), c.end());
    }
    WriteTemp(bytes, "threads_z.data/" + name);
  };
  zpart({10, 40, 50}, "data.0");
  zpart({20, 30, 60}, "data.1");
  auto z = PerfDataReader::OpenFile(zdir);
  ASSERT_TRUE(z.ok()) << z.status();
  Collect cz;
  ASSERT_TRUE((*z)->Read(cz).ok());
  EXPECT_EQ(cz.ips, (std::vector<uint64_t>{10, 20, 30, 40, 50, 60}));
  EXPECT_EQ((*z)->warnings().count(), 0u);

  // A data.N cut inside a record: the records before it, and a warning.
  part({70, 80}, "data.3");
  ASSERT_EQ(truncate((dir + "/data.3").c_str(), 100), 0);
  auto cut = PerfDataReader::OpenFile(dir);
  ASSERT_TRUE(cut.ok()) << cut.status();
  Collect cc;
  EXPECT_TRUE((*cut)->Read(cc).ok());
  EXPECT_EQ((*cut)->warnings().count(), 1u);

  // A FIFO among the files (nobody writes to it): refused at once, not
  // waited on; `data` itself too.
  ASSERT_EQ(mkfifo((dir + "/data.4").c_str(), 0600), 0);
  auto fifo = PerfDataReader::OpenFile(dir);
  EXPECT_TRUE(absl::IsDataLoss(fifo.status())) << fifo.status();
  EXPECT_NE(fifo.status().message().find("data.4: not a regular file"), absl::string_view::npos)
      << fifo.status();
  ASSERT_EQ(unlink((dir + "/data.4").c_str()), 0);
  ASSERT_EQ(unlink((dir + "/data").c_str()), 0);
  ASSERT_EQ(mkfifo((dir + "/data").c_str(), 0600), 0);
  fifo = PerfDataReader::OpenFile(dir);
  EXPECT_TRUE(absl::IsDataLoss(fifo.status())) << fifo.status();
  EXPECT_NE(fifo.status().message().find("data: not a regular file"), absl::string_view::npos)
      << fifo.status();
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
  EXPECT_EQ((*r)->warnings().count(), 0u);
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

}  // namespace
}  // namespace unwindd::proc::perf
