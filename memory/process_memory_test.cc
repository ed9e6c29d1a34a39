// Each live-process mechanism reading a forked child. After fork the child's
// address space is a copy of ours, so a buffer filled before the fork is at
// the same address, with the same bytes, in the child.
#include <signal.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "memory/factories.h"
#include "memory/memory.h"

namespace unwindd::memory {
namespace {

constexpr size_t kPage = 4096;
alignas(64) uint8_t g_buffer[256];

// A child that only sleeps; killed and reaped when the object goes away.
class SleepingChild {
 public:
  SleepingChild() {
    pid_ = fork();
    if (pid_ == 0) {
      for (;;) pause();
    }
  }
  ~SleepingChild() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    int status;
    while (waitpid(pid_, &status, __WALL) < 0 && errno == EINTR) {
    }
  }
  pid_t pid() const { return pid_; }

  // PTRACE_PEEKDATA needs the child in a ptrace-stop with us as its tracer.
  bool StopUnderPtrace() {
    if (ptrace(PTRACE_SEIZE, pid_, nullptr, nullptr) != 0) return false;
    if (ptrace(PTRACE_INTERRUPT, pid_, nullptr, nullptr) != 0) return false;
    int status;
    pid_t r;
    do {
      r = waitpid(pid_, &status, __WALL);
    } while (r < 0 && errno == EINTR);
    return r == pid_ && WIFSTOPPED(status);
  }

 private:
  pid_t pid_ = -1;
};

struct Mechanism {
  std::string name;
  std::function<std::unique_ptr<Memory>(pid_t)> create;
  bool needs_ptrace_stop;
};

class ProcessMemoryTest : public testing::TestWithParam<Mechanism> {
 protected:
  void SetUp() override {
    for (size_t i = 0; i < sizeof(g_buffer); ++i) {
      g_buffer[i] = static_cast<uint8_t>(i ^ 0x5a);
    }
    // Two pages, the second unmapped: reads crossing into it must return
    // the prefix from the first.
    void* p = mmap(nullptr, 2 * kPage, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(p, MAP_FAILED);
    two_pages_ = static_cast<uint8_t*>(p);
    memset(two_pages_, 0xab, kPage);
    ASSERT_EQ(munmap(two_pages_ + kPage, kPage), 0);

    child_ = std::make_unique<SleepingChild>();
    ASSERT_GT(child_->pid(), 0);
    if (GetParam().needs_ptrace_stop) {
      ASSERT_TRUE(child_->StopUnderPtrace());
    }
    memory_ = GetParam().create(child_->pid());
  }
  void TearDown() override {
    child_.reset();
    if (two_pages_ != nullptr) munmap(two_pages_, kPage);
  }

  uint64_t Addr(const void* p) { return reinterpret_cast<uintptr_t>(p); }

  uint8_t* two_pages_ = nullptr;
  std::unique_ptr<SleepingChild> child_;
  std::unique_ptr<Memory> memory_;
};

TEST_P(ProcessMemoryTest, ReadsTheChildsStaticBuffer) {
  uint8_t out[sizeof(g_buffer)] = {};
  ASSERT_EQ(memory_->Read(Addr(g_buffer), absl::MakeSpan(out)), sizeof(out));
  EXPECT_EQ(memcmp(out, g_buffer, sizeof(out)), 0);
}

TEST_P(ProcessMemoryTest, UnalignedRead) {
  uint8_t out[13] = {};
  ASSERT_EQ(memory_->Read(Addr(g_buffer + 3), absl::MakeSpan(out)), 13u);
  EXPECT_EQ(memcmp(out, g_buffer + 3, sizeof(out)), 0);
  absl::StatusOr<uint64_t> word = memory_->ReadU64(Addr(g_buffer + 5));
  ASSERT_TRUE(word.ok()) << word.status();
  uint64_t expected;
  memcpy(&expected, g_buffer + 5, 8);
  EXPECT_EQ(*word, expected);
}

TEST_P(ProcessMemoryTest, ReadCrossingIntoUnmappedPageReturnsPrefix) {
  uint8_t out[32];
  memset(out, 0, sizeof(out));
  EXPECT_EQ(memory_->Read(Addr(two_pages_ + kPage - 16), absl::MakeSpan(out)),
            16u);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(out[i], 0xab) << i;
  // Unaligned start too (PEEKDATA works in words).
  EXPECT_EQ(memory_->Read(Addr(two_pages_ + kPage - 13), absl::MakeSpan(out)),
            13u);
  // A big read: the whole first page.
  std::vector<uint8_t> big(3 * kPage);
  EXPECT_EQ(memory_->Read(Addr(two_pages_), absl::MakeSpan(big)), kPage);
}

// Several reads at once (process_vm_readv: one call whose iovecs stop at
// the first unreadable page) give each request what Read alone would,
// including those after an unreadable one.
TEST_P(ProcessMemoryTest, ReadManyGivesEachRequestWhatReadWould) {
  uint8_t a[sizeof(g_buffer)] = {}, b[32] = {}, c[16] = {}, d[13] = {};
  std::vector<Memory::ReadRequest> reads = {
      {Addr(g_buffer), absl::MakeSpan(a), 99},
      {Addr(two_pages_ + kPage - 16), absl::MakeSpan(b), 99},
      {Addr(two_pages_ + kPage), absl::MakeSpan(c), 99},
      {Addr(g_buffer + 3), absl::MakeSpan(d), 99},
  };
  memory_->ReadMany(absl::MakeSpan(reads));
  EXPECT_EQ(reads[0].done, sizeof(a));
  EXPECT_EQ(memcmp(a, g_buffer, sizeof(a)), 0);
  EXPECT_EQ(reads[1].done, 16u);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(b[i], 0xab) << i;
  EXPECT_EQ(reads[2].done, 0u);
  EXPECT_EQ(reads[3].done, sizeof(d));
  EXPECT_EQ(memcmp(d, g_buffer + 3, sizeof(d)), 0);
}

TEST_P(ProcessMemoryTest, UnmappedAndWrappingAddressesReadNothing) {
  uint8_t out[16];
  EXPECT_EQ(memory_->Read(Addr(two_pages_ + kPage), absl::MakeSpan(out)), 0u);
  EXPECT_EQ(memory_->Read(0, absl::MakeSpan(out)), 0u);
  EXPECT_EQ(memory_->Read(UINT64_MAX - 7, absl::MakeSpan(out)), 0u);
  EXPECT_EQ(memory_->Read(uint64_t{1} << 63, absl::MakeSpan(out)), 0u);
  EXPECT_EQ(memory_->Read(Addr(g_buffer), absl::Span<uint8_t>()), 0u);
}

INSTANTIATE_TEST_SUITE_P(
    Mechanisms, ProcessMemoryTest,
    testing::Values(Mechanism{"ProcessVmReadv", &CreateProcessVmReadvMemory,
                              false},
                    Mechanism{"ProcMemFile", &CreateProcMemFileMemory, false},
                    Mechanism{"PtracePeek", &CreatePtracePeekMemory, true},
                    Mechanism{"Best", &CreateProcessMemory, false},
                    Mechanism{"BestCached",
                              [](pid_t pid) {
                                return CreateCachedMemory(
                                    CreateProcessMemory(pid));
                              },
                              false}),
    [](const testing::TestParamInfo<Mechanism>& info) {
      return info.param.name;
    });

TEST(ProcessMemoryNoProcessTest, ReadsNothing) {
  // No process can have pid INT_MAX (pid_max is at most 2^22).
  uint8_t out[8];
  for (auto* create : {&CreateProcessVmReadvMemory, &CreateProcMemFileMemory,
                       &CreatePtracePeekMemory, &CreateProcessMemory}) {
    std::unique_ptr<Memory> m = create(INT_MAX);
    EXPECT_EQ(
        m->Read(reinterpret_cast<uintptr_t>(g_buffer), absl::MakeSpan(out)),
        0u);
  }
}

TEST(ProcessMemoryNotTracedTest, PeekWithoutPtraceStopReadsNothing) {
  SleepingChild child;
  std::unique_ptr<Memory> m = CreatePtracePeekMemory(child.pid());
  uint8_t out[8];
  EXPECT_EQ(m->Read(reinterpret_cast<uintptr_t>(g_buffer), absl::MakeSpan(out)),
            0u);
}

}  // namespace
}  // namespace unwindd::memory
