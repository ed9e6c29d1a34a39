#include "memory/file_mapping.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "memory/scoped_fd.h"

namespace unwindd::memory {
namespace {

// A temporary file of `pages` pages, page i filled with byte i + 1.
class TempFile {
 public:
  explicit TempFile(int pages) {
    const char* dir = getenv("TEST_TMPDIR");
    path_ = std::string(dir != nullptr ? dir : "/tmp") + "/file_mapping_XXXXXX";
    fd_ = ScopedFd(mkstemp(path_.data()));
    const long page = sysconf(_SC_PAGESIZE);
    for (int i = 0; i < pages; ++i) {
      std::vector<uint8_t> bytes(page, static_cast<uint8_t>(i + 1));
      EXPECT_EQ(write(fd_.get(), bytes.data(), bytes.size()), page);
    }
    size_ = static_cast<uint64_t>(pages) * page;
  }
  ~TempFile() { unlink(path_.c_str()); }
  int fd() const { return fd_.get(); }
  uint64_t size() const { return size_; }

 private:
  std::string path_;
  ScopedFd fd_;
  uint64_t size_ = 0;
};

// Reads through a volatile pointer so the compiler keeps every read.
uint8_t ReadAt(absl::Span<const uint8_t> b, size_t i) {
  return static_cast<const volatile uint8_t*>(b.data())[i];
}

TEST(FileMappingTest, ReadsTheFile) {
  TempFile f(3);
  absl::StatusOr<std::unique_ptr<FileMapping>> m = FileMapping::Map(f.fd(), f.size(), "f");
  ASSERT_TRUE(m.ok()) << m.status();
  const long page = sysconf(_SC_PAGESIZE);
  EXPECT_EQ((*m)->bytes().size(), f.size());
  EXPECT_EQ(ReadAt((*m)->bytes(), 0), 1);
  EXPECT_EQ(ReadAt((*m)->bytes(), 2 * page + 7), 3);
  EXPECT_FALSE((*m)->changed());
  EXPECT_TRUE((*m)->Check().ok());
}

TEST(FileMappingTest, TruncatedFileReadsZerosAndSaysChanged) {
  TempFile f(3);
  absl::StatusOr<std::unique_ptr<FileMapping>> m = FileMapping::Map(f.fd(), f.size(), "lib.so");
  ASSERT_TRUE(m.ok()) << m.status();
  const long page = sysconf(_SC_PAGESIZE);
  ASSERT_EQ(ftruncate(f.fd(), page), 0);
  // Without the handler this read would kill the test with SIGBUS.
  EXPECT_EQ(ReadAt((*m)->bytes(), 2 * page + 7), 0);
  EXPECT_EQ(ReadAt((*m)->bytes(), page + 1), 0);
  EXPECT_EQ(ReadAt((*m)->bytes(), 5), 1);  // still in the file
  EXPECT_TRUE((*m)->changed());
  absl::Status s = (*m)->Check();
  EXPECT_TRUE(absl::IsDataLoss(s)) << s;
  EXPECT_EQ(s.message(), "lib.so changed while it was read");
}

TEST(FileMappingTest, OtherMappingsStayUnchanged) {
  TempFile a(2), b(2);
  auto ma = FileMapping::Map(a.fd(), a.size(), "a");
  auto mb = FileMapping::Map(b.fd(), b.size(), "b");
  ASSERT_TRUE(ma.ok() && mb.ok());
  ASSERT_EQ(ftruncate(a.fd(), 0), 0);
  EXPECT_EQ(ReadAt((*ma)->bytes(), 10), 0);
  EXPECT_EQ(ReadAt((*mb)->bytes(), 10), 1);
  EXPECT_TRUE((*ma)->changed());
  EXPECT_FALSE((*mb)->changed());
}

TEST(FileMappingTest, MarkChanged) {
  TempFile f(1);
  auto m = FileMapping::Map(f.fd(), f.size(), "f");
  ASSERT_TRUE(m.ok());
  (*m)->MarkChanged();
  EXPECT_TRUE(absl::IsDataLoss((*m)->Check()));
}

TEST(FileMappingTest, UnregistersOnDestruction) {
  TempFile f(1);
  const size_t before = FileMapping::RegisteredForTest();
  {
    auto m = FileMapping::Map(f.fd(), f.size(), "f");
    ASSERT_TRUE(m.ok());
    EXPECT_EQ(FileMapping::RegisteredForTest(), before + 1);
  }
  EXPECT_EQ(FileMapping::RegisteredForTest(), before);
}

TEST(FileMappingTest, EmptyFile) {
  TempFile f(0);
  auto m = FileMapping::Map(f.fd(), 0, "f");
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE((*m)->bytes().empty());
  EXPECT_FALSE((*m)->changed());
}

// When the handler's table is full, the file is read into the heap: the same
// bytes, and a truncation after that cannot fault.
TEST(FileMappingTest, FullTableFallsBackToACopy) {
  TempFile f(1);
  std::vector<std::unique_ptr<FileMapping>> held;
  size_t last = FileMapping::RegisteredForTest();
  for (int i = 0; i < 20000; ++i) {
    auto m = FileMapping::Map(f.fd(), f.size(), "f");
    ASSERT_TRUE(m.ok()) << m.status();
    held.push_back(*std::move(m));
    const size_t now = FileMapping::RegisteredForTest();
    if (now == last) break;  // this one was copied
    last = now;
  }
  ASSERT_LT(held.size(), 20000u);
  FileMapping& copy = *held.back();
  ASSERT_EQ(ftruncate(f.fd(), 0), 0);
  EXPECT_EQ(ReadAt(copy.bytes(), 3), 1);
  EXPECT_FALSE(copy.changed());
  held.clear();
  EXPECT_EQ(FileMapping::RegisteredForTest(), 0u);
}

// MapOnly maps as Map does, and says so instead of copying when the
// table is full.
TEST(FileMappingTest, MapOnlyRefusesToCopy) {
  TempFile f(1);
  auto first = FileMapping::MapOnly(f.fd(), f.size(), "perf.data");
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(ReadAt((*first)->bytes(), 9), 1);
  std::vector<std::unique_ptr<FileMapping>> held;
  absl::Status refused;
  for (int i = 0; i < 20000 && refused.ok(); ++i) {
    auto m = FileMapping::MapOnly(f.fd(), f.size(), "perf.data");
    if (m.ok()) {
      held.push_back(*std::move(m));
    } else {
      refused = m.status();
    }
  }
  EXPECT_TRUE(absl::IsUnavailable(refused)) << refused;
  EXPECT_NE(refused.message().find("perf.data: cannot be mapped safely"), absl::string_view::npos)
      << refused;
  held.clear();
  first->reset();
  EXPECT_EQ(FileMapping::RegisteredForTest(), 0u);
}

// The resident KiB of the mapping that holds `p` (smaps walks the page
// tables; statm's counters are approximate), or -1.
long ResidentKib(const void* p) {
  FILE* f = fopen("/proc/self/smaps", "r");
  if (f == nullptr) return -1;
  const uintptr_t at = reinterpret_cast<uintptr_t>(p);
  char line[512];
  bool in = false;
  long kib = -1;
  while (fgets(line, sizeof(line), f) != nullptr) {
    unsigned long lo = 0, hi = 0;
    if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
      in = at >= lo && at < hi;
    } else if (in && sscanf(line, "Rss: %ld kB", &kib) == 1) {
      break;
    }
  }
  fclose(f);
  return kib;
}

// Released pages leave the resident set and read the file again.
TEST(FileMappingTest, ReleasedPagesReadTheFileAgain) {
  const long page = sysconf(_SC_PAGESIZE);
  TempFile f(64);
  auto m = FileMapping::MapOnly(f.fd(), f.size(), "f");
  ASSERT_TRUE(m.ok()) << m.status();
  const void* data = (*m)->bytes().data();
  for (size_t i = 0; i < f.size(); i += page) ReadAt((*m)->bytes(), i);
  EXPECT_EQ(ResidentKib(data), 64 * page / 1024);
  // Not page-aligned at either end: only the 60 whole pages inside go.
  (*m)->Release(page / 2, 61 * page);
  EXPECT_EQ(ResidentKib(data), 4 * page / 1024);
  for (int i = 0; i < 64; ++i) EXPECT_EQ(ReadAt((*m)->bytes(), i * page + 3), i + 1);
  EXPECT_FALSE((*m)->changed());
  (*m)->Release(f.size() - 1, 100);  // less than a page, at the end: nothing
  (*m)->Release(f.size() + 5, 1);    // past the end: nothing
  EXPECT_EQ(ResidentKib(data), 64 * page / 1024);
}

// A SIGBUS outside every registered mapping still kills, as it would have
// without the handler (installed by now: `keep` was mapped).
TEST(FileMappingDeathTest, ForeignFaultStillKills) {
  TempFile keep(1);
  ASSERT_TRUE(FileMapping::Map(keep.fd(), keep.size(), "k").ok());
  EXPECT_EXIT(
      {
        TempFile f(2);
        void* p = mmap(nullptr, f.size(), PROT_READ, MAP_PRIVATE, f.fd(), 0);
        if (p == MAP_FAILED) _exit(100);
        if (ftruncate(f.fd(), 0) != 0) _exit(101);
        volatile uint8_t x = static_cast<volatile uint8_t*>(p)[10];
        (void)x;
        _exit(0);
      },
      // Killed by SIGBUS; under ASan, its own SIGBUS handler (the one ours
      // chains to) reports "BUS on unknown address" and exits (with its
      // exitcode, not the setup failures' 100 and 101, nor 0).
      [](int status) {
        if (WIFSIGNALED(status)) return WTERMSIG(status) == SIGBUS;
        return WIFEXITED(status) && WEXITSTATUS(status) != 0 &&
               WEXITSTATUS(status) != 100 && WEXITSTATUS(status) != 101;
      },
      "");
}

}  // namespace
}  // namespace unwindd::memory
