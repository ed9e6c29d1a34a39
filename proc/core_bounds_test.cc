// Issue 14 "bounded work", for cores: a core with a million notes, or with
// more threads than any process runs, must be read in time linear in its
// size, with a warning that says what was left out (the warning is what is
// checked; the time is only a sanity net).
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "proc/core_file.h"
#include "proc/core_notes.h"
#include "proc/core_target.h"
#include "proc/testing/core_builder.h"

namespace unwindd::proc {
namespace {

using testing::CoreBuilder;
using testing::WriteTempFile;

struct Opened {
  std::unique_ptr<CoreTarget> core;
  double seconds = 0;
};

Opened Open(const CoreBuilder& b) {
  const std::string path = WriteTempFile(b.Build());
  CoreOptions options;
  options.lookup.sysroot = ::testing::TempDir();  // no host file is used
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::unique_ptr<CoreTarget>> t = OpenCore(path, options);
  Opened o;
  o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                            start)
                  .count();
  EXPECT_TRUE(t.ok()) << t.status();
  if (t.ok()) o.core = *std::move(t);
  return o;
}

bool Warned(const CoreTarget& t, const std::string& part) {
  for (const std::string& w : t.report().warnings) {
    if (w.find(part) != std::string::npos) return true;
  }
  return false;
}

TEST(CoreBoundsTest, MillionNotesAreReadUpToTheLimitWithAWarning) {
  CoreBuilder b;
  b.AddThread(100, 0x401000, 0x7ffd0000);
  b.AddSegment(0x7ffd0000, std::vector<uint8_t>(4096, 0));
  // kMaxCoreNotes + 1 notes of a type nobody reads (20 bytes each).
  for (uint64_t i = 0; i < kMaxCoreNotes; ++i) b.AddNote("X", 0x7777, {});
  Opened o = Open(b);
  ASSERT_NE(o.core, nullptr);
  EXPECT_EQ(o.core->Threads(), std::vector<pid_t>{100});
  EXPECT_TRUE(Warned(*o.core, "more than 1048576 notes"));
  EXPECT_LT(o.core->report().warnings.size(), 10u);
  EXPECT_LT(o.seconds, 60) << "sanity net only";
}

TEST(CoreBoundsTest, ThreadsPastTheLimitAreIgnoredWithOneWarning) {
  CoreBuilder b;
  for (pid_t tid = 1; tid <= static_cast<pid_t>(kMaxCoreThreads) + 10; ++tid) {
    b.AddThread(tid, 0x401000, 0x7ffd0000);
  }
  b.AddSegment(0x7ffd0000, std::vector<uint8_t>(4096, 0));
  Opened o = Open(b);
  ASSERT_NE(o.core, nullptr);
  EXPECT_EQ(o.core->Threads().size(), kMaxCoreThreads);
  EXPECT_TRUE(Warned(*o.core, "more than 65536 threads"));
  // One per ignored thread, and the few CoreTarget adds (no NT_FILE...).
  EXPECT_LE(o.core->report().warnings.size(), 10u + 8u);
  EXPECT_LT(o.seconds, 60) << "sanity net only";
}

TEST(CoreBoundsTest, RepeatedThreadNotesGiveBoundedWarnings) {
  CoreBuilder b;
  for (int i = 0; i < 100000; ++i) b.AddThread(100, 0x401000, 0x7ffd0000);
  b.AddSegment(0x7ffd0000, std::vector<uint8_t>(4096, 0));
  Opened o = Open(b);
  ASSERT_NE(o.core, nullptr);
  EXPECT_EQ(o.core->Threads(), std::vector<pid_t>{100});
  // kMaxCoreWarnings, "... and N more", and the few CoreTarget adds.
  EXPECT_LE(o.core->report().warnings.size(), kMaxCoreWarnings + 1 + 8);
  EXPECT_TRUE(Warned(*o.core, "more warnings"));
  EXPECT_LT(o.seconds, 60) << "sanity net only";
}

}  // namespace
}  // namespace unwindd::proc
