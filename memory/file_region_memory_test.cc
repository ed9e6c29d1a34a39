#include "memory/file_region_memory.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace unwindd::memory {
namespace {

// A temporary file whose byte at offset i is (i + salt) & 0xff.
std::shared_ptr<const ScopedFd> PatternFile(size_t size, uint8_t salt) {
  std::string path = ::testing::TempDir() + "/frm_XXXXXX";
  int fd = mkostemp(path.data(), O_CLOEXEC);
  EXPECT_GE(fd, 0);
  unlink(path.c_str());
  std::vector<uint8_t> bytes(size);
  for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<uint8_t>(i + salt);
  EXPECT_EQ(pwrite(fd, bytes.data(), size, 0), static_cast<ssize_t>(size));
  return std::make_shared<ScopedFd>(fd);
}

std::vector<uint8_t> ReadN(Memory& m, uint64_t addr, size_t n, size_t* got) {
  std::vector<uint8_t> out(n);
  *got = m.Read(addr, absl::MakeSpan(out));
  out.resize(*got);
  return out;
}

TEST(FileRegionMemoryTest, ReadsAtFileOffset) {
  auto f = PatternFile(0x3000, 0);
  auto m = CreateFileRegionMemory({{0x400000, 0x1000, f, 0x2000}});
  ASSERT_TRUE(m.ok()) << m.status();
  absl::StatusOr<uint8_t> b = (*m)->ReadU8(0x400010);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b, static_cast<uint8_t>(0x2010));
  EXPECT_FALSE((*m)->ReadU8(0x3fffff).ok());
  EXPECT_FALSE((*m)->ReadU8(0x401000).ok());
}

TEST(FileRegionMemoryTest, EarlierRegionWinsOverlaps) {
  auto core = PatternFile(0x1000, 0x80);
  auto lib = PatternFile(0x4000, 0);
  // The core has the middle page; the library file backs all three.
  auto m = CreateFileRegionMemory(
      {{0x11000, 0x1000, core, 0}, {0x10000, 0x3000, lib, 0x1000}});
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(*(*m)->ReadU8(0x10005), static_cast<uint8_t>(0x1005));
  EXPECT_EQ(*(*m)->ReadU8(0x11005), static_cast<uint8_t>(0x85));
  EXPECT_EQ(*(*m)->ReadU8(0x12005), static_cast<uint8_t>(0x3005));
  // One read across the boundary stops at it; ReadFully stitches.
  size_t got = 0;
  ReadN(**m, 0x10ffe, 4, &got);
  EXPECT_EQ(got, 2u);
  uint8_t buf[4];
  ASSERT_TRUE((*m)->ReadFully(0x10ffe, absl::MakeSpan(buf)).ok());
  EXPECT_EQ(buf[1], static_cast<uint8_t>(0x1fff));
  EXPECT_EQ(buf[2], static_cast<uint8_t>(0x80));
}

TEST(FileRegionMemoryTest, RegionPastEndOfFileIsReadableToEof) {
  auto f = PatternFile(0x1800, 0);
  auto m = CreateFileRegionMemory({{0x1000, 0x2000, f, 0}});
  ASSERT_TRUE(m.ok());
  size_t got = 0;
  ReadN(**m, 0x27f0, 0x100, &got);
  EXPECT_EQ(got, 0x10u);
  EXPECT_FALSE((*m)->ReadU8(0x2800).ok());
  std::vector<uint8_t> buf(0x20);
  absl::Status s = (*m)->ReadFully(0x27f0, absl::MakeSpan(buf));
  EXPECT_TRUE(absl::IsOutOfRange(s)) << s;
  EXPECT_NE(s.message().find("0x2800"), std::string::npos) << s;
}

TEST(FileRegionMemoryTest, IdenticalOverlapsResolveToTheFirst) {
  auto a = PatternFile(0x1000, 1);
  auto b = PatternFile(0x1000, 2);
  auto m =
      CreateFileRegionMemory({{0x1000, 0x1000, a, 0}, {0x1000, 0x1000, b, 0}});
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(*(*m)->ReadU8(0x1000), 1);
}

TEST(FileRegionMemoryTest, RejectsWrapAndMissingFile) {
  auto f = PatternFile(0x10, 0);
  EXPECT_TRUE(absl::IsInvalidArgument(
      CreateFileRegionMemory({{UINT64_MAX - 0x10, 0x20, f, 0}}).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(
      CreateFileRegionMemory({{0x1000, 0x10, nullptr, 0}}).status()));
  // Up to the very top is fine.
  auto m = CreateFileRegionMemory({{UINT64_MAX - 0x10, 0x10, f, 0}});
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(*(*m)->ReadU8(UINT64_MAX - 1), 0x0f);
}

TEST(FileRegionMemoryTest, EmptyRegionsAndNoRegions) {
  auto f = PatternFile(0x10, 0);
  auto m = CreateFileRegionMemory({{0x1000, 0, f, 0}});
  ASSERT_TRUE(m.ok());
  EXPECT_FALSE((*m)->ReadU8(0x1000).ok());
  auto none = CreateFileRegionMemory({});
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE((*none)->ReadU8(0).ok());
}

TEST(FileRegionMemoryTest, ManyNestedRegionsStayFast) {
  // Every region contains all later ones: quadratic if overlaps were
  // resolved pairwise.
  auto f = PatternFile(0x10, 0);
  std::vector<FileRegion> regions;
  for (uint64_t i = 0; i < 50000; ++i) {
    regions.push_back({0x100000 + i, 0x200000 - 2 * i, f, 0});
  }
  auto m = CreateFileRegionMemory(std::move(regions));
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(*(*m)->ReadU8(0x100005), 5);
}

}  // namespace
}  // namespace unwindd::memory
