// Issue 14, file races, at the module layer: a module's file truncated or
// rewritten in place after it was opened. Lookups then fail with DataLoss
// ("changed while it was read") instead of raising SIGBUS or answering from
// the new bytes, and the cache stops handing the module out.
#include <elf.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "memory/scoped_fd.h"
#include "testdata/harness/tools.h"
#include "unwinder/module.h"
#include "unwinder/module_cache.h"

namespace unwindd::unwinder {
namespace {

// A private copy of the demo fixture (an -O2 PIE with .eh_frame_hdr).
class CopiedElf : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ifstream in(harness::FixturePath("demo_O2_nofp_pie"), std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    bytes_ = s.str();
    ASSERT_GT(bytes_.size(), sizeof(Elf64_Ehdr));
    Elf64_Ehdr ehdr;
    std::memcpy(&ehdr, bytes_.data(), sizeof(ehdr));
    entry_ = ehdr.e_entry;
    const char* tmp = std::getenv("TEST_TMPDIR");
    path_ = std::string(tmp != nullptr ? tmp : "/tmp") + "/module_race_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name();
    Rewrite(bytes_);
  }
  void TearDown() override { unlink(path_.c_str()); }

  // In place: the same inode, truncated first (as `cp` over it does).
  void Rewrite(const std::string& bytes) {
    memory::ScopedFd fd = memory::OpenCloexec(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC);
    ASSERT_TRUE(fd.valid());
    ASSERT_EQ(write(fd.get(), bytes.data(), bytes.size()),
              static_cast<ssize_t>(bytes.size()));
  }
  void Truncate(off_t size) { ASSERT_EQ(truncate(path_.c_str(), size), 0); }

  arch::FrameAddress Entry() const { return arch::FrameAddress::InstructionPointer(entry_); }

  std::string bytes_;
  std::string path_;
  uint64_t entry_ = 0;
};

TEST_F(CopiedElf, UntouchedFileAnswers) {
  absl::StatusOr<std::shared_ptr<Module>> m = Module::OpenFile(path_);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_TRUE((*m)->FindRow(Entry()).ok());
  EXPECT_FALSE((*m)->changed());
}

TEST_F(CopiedElf, TruncatedBetweenOpenAndLookupIsDataLoss) {
  absl::StatusOr<std::shared_ptr<Module>> m = Module::OpenFile(path_);
  ASSERT_TRUE(m.ok()) << m.status();
  Truncate(0);  // without the SIGBUS guard, the lookup below would kill us
  absl::StatusOr<ModuleRow> row = (*m)->FindRow(Entry());
  ASSERT_FALSE(row.ok());
  EXPECT_TRUE(absl::IsDataLoss(row.status())) << row.status();
  EXPECT_EQ(row.status().message(), path_ + " changed while it was read");
  EXPECT_TRUE((*m)->changed());
  // Cached rows are not served either.
  EXPECT_TRUE(absl::IsDataLoss((*m)->FindRow(Entry()).status()));
}

TEST_F(CopiedElf, TruncatedToItsHeadersIsDataLossToo) {
  absl::StatusOr<std::shared_ptr<Module>> m = Module::OpenFile(path_);
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_TRUE((*m)->has_eh_frame_hdr());
  // The ELF and program headers stay; .eh_frame_hdr (past the first page
  // in this file) reads as zeros, and that is noticed.
  Truncate(4096);
  absl::StatusOr<ModuleRow> row = (*m)->FindRow(Entry());
  ASSERT_FALSE(row.ok());
  EXPECT_TRUE(absl::IsDataLoss(row.status())) << row.status();
}

TEST_F(CopiedElf, CacheDropsATruncatedModule) {
  ModuleCache cache;
  absl::StatusOr<std::shared_ptr<Module>> m = cache.GetFile(path_);
  ASSERT_TRUE(m.ok()) << m.status();
  Truncate(0);
  EXPECT_TRUE(absl::IsDataLoss((*m)->FindRow(Entry()).status()));
  Rewrite(bytes_);
  absl::StatusOr<std::shared_ptr<Module>> again = cache.GetFile(path_);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_NE(again->get(), m->get());
  EXPECT_TRUE((*again)->FindRow(Entry()).ok());
}

// Rewritten in place with other contents of the same size: nothing faults,
// but the inode's new size/time stamp makes the cache mark the old module
// changed (it maps the new bytes now) and open the file afresh.
TEST_F(CopiedElf, CacheNoticesARewriteInPlace) {
  ModuleCache cache;
  absl::StatusOr<std::shared_ptr<Module>> m = cache.GetFile(path_);
  ASSERT_TRUE(m.ok()) << m.status();
  std::string other = bytes_;
  other[other.size() - 1] ^= 0x5a;  // same size, other contents
  Rewrite(other);
  absl::StatusOr<std::shared_ptr<Module>> again = cache.GetFile(path_);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_NE(again->get(), m->get());
  EXPECT_TRUE((*m)->changed());
  EXPECT_TRUE(absl::IsDataLoss((*m)->FindRow(Entry()).status()));
  EXPECT_FALSE((*again)->changed());
  EXPECT_TRUE((*again)->FindRow(Entry()).ok());
}

// A module whose file changed is not shared by build-id with a new copy.
TEST_F(CopiedElf, ChangedModuleIsNotSharedByBuildId) {
  ModuleCache cache;
  absl::StatusOr<std::shared_ptr<Module>> m = cache.GetFile(path_);
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_FALSE((*m)->build_id().empty());
  const std::string copy = path_ + ".copy";
  std::ofstream(copy, std::ios::binary) << bytes_;
  Truncate(0);
  EXPECT_FALSE((*m)->FindRow(Entry()).ok());
  absl::StatusOr<std::shared_ptr<Module>> other = cache.GetFile(copy);
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_NE(other->get(), m->get());
  EXPECT_TRUE((*other)->FindRow(Entry()).ok());
  unlink(copy.c_str());
}

}  // namespace
}  // namespace unwindd::unwinder
