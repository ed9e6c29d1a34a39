// SamplePipeline: results in submission order, and each sample's module
// descriptions and mapping table alive while its sink or formatter reads
// them, also after the worker has dropped the sample's target (more
// processes than kMaxTargetsPerWorker). Under --config=asan a description
// freed too early is a use-after-free report.
#include "service/cli/perf/sample_pipeline.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "arch/register_set.h"
#include "gtest/gtest.h"
#include "memory/file_mapping.h"
#include "memory/scoped_fd.h"
#include "proc/snapshot_target.h"

namespace unwindd::service::perf {
namespace {

constexpr uint64_t kBase = 0x400000;
constexpr int kTargets = 3 * static_cast<int>(kMaxTargetsPerWorker);

std::shared_ptr<const proc::SnapshotFile> SelfFile() {
  memory::ScopedFd fd(open("/proc/self/exe", O_RDONLY | O_CLOEXEC));
  absl::StatusOr<std::shared_ptr<const proc::SnapshotFile>> f =
      proc::SnapshotFile::FromFd(std::move(fd));
  EXPECT_TRUE(f.ok()) << f.status();
  return f.ok() ? *f : nullptr;
}

// One mapping table per target: this test's own file, named after it.
std::vector<std::shared_ptr<const std::vector<proc::SnapshotMapping>>> Tables() {
  std::shared_ptr<const proc::SnapshotFile> file = SelfFile();
  std::vector<std::shared_ptr<const std::vector<proc::SnapshotMapping>>> tables;
  for (int t = 0; t < kTargets; ++t) {
    proc::SnapshotMapping m;
    m.mapping.start = kBase;
    m.mapping.end = kBase + (file->size() & ~uint64_t{0xfff});
    m.mapping.read = true;
    m.mapping.exec = true;
    m.mapping.path = absl::StrCat("/module/", t);
    m.file = file;
    tables.push_back(std::make_shared<const std::vector<proc::SnapshotMapping>>(
        std::vector<proc::SnapshotMapping>{m}));
  }
  return tables;
}

// Round r visits every target, so each worker's least recently used
// target is dropped again and again while samples of it are in flight.
void SubmitAll(SamplePipeline& pipeline,
               const std::vector<std::shared_ptr<const std::vector<proc::SnapshotMapping>>>&
                   tables) {
  uint32_t n = 0;
  for (int round = 0; round < 4; ++round) {
    for (int t = 0; t < kTargets; ++t) {
      UnwoundSample& s = pipeline.Next();
      s.pid = static_cast<uint32_t>(1000 + t);
      s.tid = n++;
      s.target_id = static_cast<uint64_t>(t + 1);
      s.mappings = pipeline.Hold(tables[t]);
      s.registers = arch::RegisterSet(arch::Arch::kX86_64);
      s.registers.Set(s.registers.info().pc, kBase + 0x1000);
      s.registers.Set(s.registers.info().sp, 0x7ff000);
      pipeline.Commit();
    }
  }
}

// The parameter is the number of jobs; 0 is one job run inline, on the
// thread that commits (PipelineOptions::inline_single_job).
class SamplePipelineTest : public testing::TestWithParam<int> {
 protected:
  static PipelineOptions Options() {
    PipelineOptions options;
    options.jobs = std::max(1, GetParam());
    options.inline_single_job = GetParam() == 0;
    options.unwind.max_frames = 4;
    return options;
  }
};

TEST_P(SamplePipelineTest, ModulesOutliveDroppedTargets) {
  PipelineOptions options = Options();
  uint32_t next_tid = 0;
  int checked = 0;
  {
    SamplePipeline pipeline(options, [&](UnwoundSample& s) {
      // A slow sink: the workers run batches ahead of the writer, dropping
      // targets whose samples wait to be written.
      absl::SleepFor(absl::Microseconds(100));
      EXPECT_EQ(s.tid, next_tid++);  // in submission order
      ASSERT_TRUE(s.error.empty()) << s.error;
      ASSERT_NE(s.mappings, nullptr);
      EXPECT_EQ((*s.mappings)[0].mapping.path, absl::StrCat("/module/", s.pid - 1000));
      ASSERT_FALSE(s.thread.frames.empty());
      const int m = s.thread.frames[0].module;
      ASSERT_GE(m, 0);
      ASSERT_LT(static_cast<size_t>(m), s.modules.size());
      EXPECT_EQ(s.modules[m]->path, absl::StrCat("/module/", s.pid - 1000));
      ++checked;
    });
    SubmitAll(pipeline, Tables());
    pipeline.Finish();
  }
  EXPECT_EQ(checked, 4 * kTargets);
}

TEST_P(SamplePipelineTest, WorkersFormatInOrder) {
  PipelineOptions options = Options();
  options.worker_formatter = [] {
    return [](const UnwoundSample& s, cli::TextBuffer* out) {
      const int m = s.thread.frames.empty() ? -1 : s.thread.frames[0].module;
      out->Append(absl::StrCat(s.tid, " ", m >= 0 ? s.modules[m]->path : "?", "\n"));
    };
  };
  std::string text;
  options.write_text = [&](absl::string_view t) { absl::StrAppend(&text, t); };
  {
    SamplePipeline pipeline(options, [](UnwoundSample&) { ADD_FAILURE() << "sink called"; });
    SubmitAll(pipeline, Tables());
    pipeline.Finish();
  }
  std::string want;
  uint32_t n = 0;
  for (int round = 0; round < 4; ++round) {
    for (int t = 0; t < kTargets; ++t) absl::StrAppend(&want, n++, " /module/", t, "\n");
  }
  EXPECT_EQ(text, want);
}

// Samples that hold input (chunks of a file read ahead, HoldBytes) end a
// batch once it holds kBatchHeldBytes, and a written batch lets go of its
// chunks at once: what is held stays within the batches in flight, however
// large the samples, instead of 64 samples a batch.
TEST_P(SamplePipelineTest, HeldInputIsBoundedByBytes) {
  constexpr size_t kChunk = size_t{256} << 10;  // a record's worth each
  PipelineOptions options = Options();
  int live = 0;
  int most = 0;
  std::mutex mu;
  const std::vector<std::shared_ptr<const std::vector<proc::SnapshotMapping>>> tables =
      Tables();
  {
    SamplePipeline pipeline(options, [](UnwoundSample&) {
      absl::SleepFor(absl::Microseconds(50));  // the workers run ahead
    });
    for (uint32_t n = 0; n < 600; ++n) {
      auto chunk = std::shared_ptr<const void>(new int(0), [&](const void* p) {
        delete static_cast<const int*>(p);
        std::lock_guard<std::mutex> lock(mu);
        --live;
      });
      {
        std::lock_guard<std::mutex> lock(mu);
        most = std::max(most, ++live);
      }
      UnwoundSample& s = pipeline.Next();
      s.pid = 1000;
      s.tid = n;
      s.target_id = 1;
      s.mappings = pipeline.Hold(tables[0]);
      pipeline.HoldBytes(chunk, kChunk);
      chunk.reset();
      s.registers = arch::RegisterSet(arch::Arch::kX86_64);
      s.registers.Set(s.registers.info().pc, kBase + 0x1000);
      s.registers.Set(s.registers.info().sp, 0x7ff000);
      pipeline.Commit();
    }
    // Every batch is full (4 samples each), so none is open: once all are
    // written, nothing holds a chunk, before Finish.
    const absl::Time deadline = absl::Now() + absl::Seconds(30);
    int still = 0;
    do {
      absl::SleepFor(absl::Milliseconds(1));
      std::lock_guard<std::mutex> lock(mu);
      still = live;
    } while (still > 0 && absl::Now() < deadline);
    EXPECT_EQ(still, 0) << "chunks still held by written batches";
    pipeline.Finish();
  }
  EXPECT_EQ(live, 0);
  if (GetParam() == 0) {
    // Inline, a sample lets go of its chunk once it is written, before
    // the next one is read.
    EXPECT_EQ(most, 1);
    return;
  }
  // At most 2 * jobs + 4 batches in flight, and the open one, each of
  // kBatchHeldBytes / kChunk samples.
  const int per_batch = static_cast<int>(kBatchHeldBytes / kChunk);
  EXPECT_LE(most, (2 * GetParam() + 4 + 1) * per_batch + 1);
}

INSTANTIATE_TEST_SUITE_P(Jobs, SamplePipelineTest, testing::Values(0, 1, 2, 4));

// One job inline: each sample is unwound and written on the committing
// thread before Commit returns; text comes out in order, a batch's worth
// at a time and the rest at Finish.
TEST(SamplePipelineInlineTest, WritesOnTheCommittingThreadBeforeCommitReturns) {
  PipelineOptions options;
  options.jobs = 1;
  options.inline_single_job = true;
  options.unwind.max_frames = 4;
  const std::thread::id caller = std::this_thread::get_id();
  uint32_t written = 0;
  const std::vector<std::shared_ptr<const std::vector<proc::SnapshotMapping>>> tables =
      Tables();
  SamplePipeline pipeline(options, [&](UnwoundSample& s) {
    EXPECT_EQ(std::this_thread::get_id(), caller);
    EXPECT_EQ(s.tid, written);
    ASSERT_FALSE(s.thread.frames.empty());
    EXPECT_GE(s.thread.frames[0].module, 0);
    ++written;
  });
  for (uint32_t n = 0; n < 10; ++n) {
    UnwoundSample& s = pipeline.Next();
    s.pid = 1000;
    s.tid = n;
    s.target_id = 1;
    s.mappings = pipeline.Hold(tables[0]);
    s.registers = arch::RegisterSet(arch::Arch::kX86_64);
    s.registers.Set(s.registers.info().pc, kBase + 0x1000);
    s.registers.Set(s.registers.info().sp, 0x7ff000);
    pipeline.Commit();
    EXPECT_EQ(written, n + 1);
    EXPECT_EQ(pipeline.unwound(), n + 1);
  }
  pipeline.Finish();
  EXPECT_EQ(written, 10u);
}

// A stack copy read in place ends where the file's intact bytes do once
// the file shrank under its mapping (the pages past its new end read as
// zeros there), as a pread of it would end.
TEST(IntactCopyTest, EndsWhereTheFileNowEnds) {
  const long page = sysconf(_SC_PAGESIZE);
  const std::string path = absl::StrCat(testing::TempDir(), "/intact_copy.data");
  {
    std::vector<uint8_t> bytes(8 * page, 0x5a);
    memory::ScopedFd out(open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
    ASSERT_EQ(write(out.get(), bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  }
  memory::ScopedFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  auto m = memory::FileMapping::MapOnly(fd.get(), 8 * page, path);
  ASSERT_TRUE(m.ok()) << m.status();
  const memory::FileMapping& file = **m;
  // A copy of 4 pages from page 2, and one that runs past the end.
  absl::Span<const uint8_t> copy = IntactCopy(file, 2 * page, 4 * page);
  EXPECT_EQ(copy.data(), file.bytes().data() + 2 * page);
  EXPECT_EQ(copy.size(), 4u * page);
  EXPECT_EQ(IntactCopy(file, 7 * page, 4 * page).size(), 1u * page);
  EXPECT_TRUE(IntactCopy(file, 9 * page, 16).empty());
  // Cut at page 4, and read page 5 (a walk reading the copy): zeros, and
  // the copy now ends at page 5, the first page read as zeros (page 4 was
  // not read: no walk saw its zeros).
  ASSERT_EQ(truncate(path.c_str(), 4 * page), 0);
  EXPECT_EQ(static_cast<const volatile uint8_t*>(copy.data())[3 * page], 0);
  EXPECT_TRUE(file.changed());
  copy = IntactCopy(file, 2 * page, 4 * page);
  EXPECT_EQ(copy.size(), 3u * page);
  EXPECT_EQ(copy[0], 0x5a);
  EXPECT_TRUE(IntactCopy(file, 5 * page, 16).empty());
  unlink(path.c_str());
}

}  // namespace
}  // namespace unwindd::service::perf
