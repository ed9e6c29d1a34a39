// Buffer memory and the Memory helpers on top of it.
#include "memory/memory.h"

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "memory/factories.h"

namespace unwindd::memory {
namespace {

std::vector<uint8_t> Iota(size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i);
  return v;
}

TEST(BufferMemoryTest, ReadsInsideTheBuffer) {
  std::unique_ptr<Memory> m = CreateBufferMemory(0x1000, Iota(16));
  uint8_t out[4] = {};
  ASSERT_EQ(m->Read(0x1004, absl::MakeSpan(out)), 4u);
  EXPECT_EQ(out[0], 4);
  EXPECT_EQ(out[3], 7);
}

TEST(BufferMemoryTest, PartialReadAtTheEnd) {
  std::unique_ptr<Memory> m = CreateBufferMemory(0x1000, Iota(16));
  uint8_t out[8] = {};
  ASSERT_EQ(m->Read(0x100c, absl::MakeSpan(out)), 4u);
  EXPECT_EQ(out[0], 12);
  EXPECT_EQ(out[3], 15);
  EXPECT_EQ(out[4], 0) << "bytes past the prefix must be untouched";
}

TEST(BufferMemoryTest, OutOfRangeReadsNothing) {
  std::unique_ptr<Memory> m = CreateBufferMemory(0x1000, Iota(16));
  uint8_t out[8];
  EXPECT_EQ(m->Read(0xfff, absl::MakeSpan(out)), 0u);
  EXPECT_EQ(m->Read(0x1010, absl::MakeSpan(out)), 0u);
  EXPECT_EQ(m->Read(0, absl::MakeSpan(out)), 0u);
  EXPECT_EQ(m->Read(UINT64_MAX, absl::MakeSpan(out)), 0u);
  EXPECT_EQ(m->Read(0x1000, absl::Span<uint8_t>()), 0u);
}

TEST(BufferMemoryTest, TopOfAddressSpaceDoesNotWrap) {
  std::unique_ptr<Memory> m = CreateBufferMemory(UINT64_MAX - 3, Iota(4));
  uint8_t out[16];
  EXPECT_EQ(m->Read(UINT64_MAX - 1, absl::MakeSpan(out)), 2u);
  EXPECT_EQ(out[0], 2);
  EXPECT_EQ(out[1], 3);
  EXPECT_EQ(m->ReadU64(UINT64_MAX - 3).status().code(),
            absl::StatusCode::kOutOfRange);
}

TEST(BufferMemoryTest, EmptyBuffer) {
  std::unique_ptr<Memory> m = CreateBufferMemory(0x1000, {});
  uint8_t out[1];
  EXPECT_EQ(m->Read(0x1000, absl::MakeSpan(out)), 0u);
}

TEST(BufferMemoryTest, HelpersReadLittleEndian) {
  std::unique_ptr<Memory> m = CreateBufferMemory(0x2000, Iota(16));
  EXPECT_EQ(*m->ReadU16(0x2000), 0x0100u);
  EXPECT_EQ(*m->ReadU32(0x2004), 0x07060504u);
  EXPECT_EQ(*m->ReadU64(0x2008), 0x0f0e0d0c0b0a0908u);
  absl::StatusOr<uint64_t> past = m->ReadU64(0x200c);
  ASSERT_FALSE(past.ok());
  EXPECT_EQ(past.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_NE(past.status().message().find("0x2010"), absl::string_view::npos)
      << past.status();
}

}  // namespace
}  // namespace unwindd::memory
