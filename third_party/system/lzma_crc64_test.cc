// The static `unwind`'s lzma_crc64 (lzma_crc64.cc) against the CRC-64/XZ
// definition, and against liblzma's own where the test links the shared
// library (looked up in liblzma.so.5 itself).
#include <dlfcn.h>
#include <lzma.h>

#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace {

// Bit by bit, from the definition (ECMA-182, reflected, inverted in and out).
uint64_t Reference(const uint8_t* buf, size_t size, uint64_t crc) {
  crc = ~crc;
  for (size_t i = 0; i < size; ++i) {
    crc ^= buf[i];
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ ((crc & 1) ? 0xC96C5795D7870F42 : 0);
  }
  return ~crc;
}

std::vector<uint8_t> Random(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (uint8_t& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

TEST(LzmaCrc64, CheckValue) {
  const uint8_t check[] = {'1', '2', '3', '4', '5', '6', '7', '8', '9'};
  EXPECT_EQ(lzma_crc64(check, sizeof(check), 0), 0x995DC9BBDF1939FAu);
  EXPECT_EQ(lzma_crc64(nullptr, 0, 0), 0u);
  EXPECT_EQ(lzma_crc64(nullptr, 0, 0x1234), 0x1234u);
}

TEST(LzmaCrc64, EveryLengthAndAlignmentAsTheDefinition) {
  const std::vector<uint8_t> data = Random(300, 1);
  for (size_t start = 0; start < 9; ++start) {
    for (size_t n = 0; start + n <= data.size(); n += (n < 40 ? 1 : 37)) {
      EXPECT_EQ(lzma_crc64(data.data() + start, n, 0), Reference(data.data() + start, n, 0))
          << "start " << start << " length " << n;
    }
  }
}

TEST(LzmaCrc64, PiecesAsTheWhole) {
  const std::vector<uint8_t> data = Random(10000, 2);
  const uint64_t whole = lzma_crc64(data.data(), data.size(), 0);
  uint64_t crc = 0;
  for (size_t at = 0, step = 1; at < data.size(); at += step, step = step * 3 % 997 + 1) {
    const size_t n = std::min(step, data.size() - at);
    crc = lzma_crc64(data.data() + at, n, crc);
  }
  EXPECT_EQ(crc, whole);
}

TEST(LzmaCrc64, AsLiblzmasOwn) {
  using Fn = uint64_t (*)(const uint8_t*, size_t, uint64_t);
  void* lib = dlopen("liblzma.so.5", RTLD_LAZY | RTLD_NOLOAD);
  auto theirs = lib == nullptr ? nullptr : reinterpret_cast<Fn>(dlsym(lib, "lzma_crc64"));
  if (theirs == nullptr || theirs == &lzma_crc64) {
    GTEST_SKIP() << "liblzma is linked statically here: no second lzma_crc64";
  }
  for (uint32_t seed = 0; seed < 20; ++seed) {
    const std::vector<uint8_t> data = Random(seed * 613, seed);
    EXPECT_EQ(lzma_crc64(data.data(), data.size(), seed), theirs(data.data(), data.size(), seed));
  }
}

TEST(LzmaCrc64, XzStreamsWithCrc64RoundTrip) {
  const std::vector<uint8_t> data = Random(100000, 3);
  std::vector<uint8_t> xz(data.size() + 4096);
  size_t xz_size = 0;
  ASSERT_EQ(lzma_easy_buffer_encode(1, LZMA_CHECK_CRC64, nullptr, data.data(), data.size(),
                                    xz.data(), &xz_size, xz.size()),
            LZMA_OK);
  std::vector<uint8_t> out(data.size());
  uint64_t memlimit = UINT64_MAX;
  size_t in_pos = 0, out_pos = 0;
  ASSERT_EQ(lzma_stream_buffer_decode(&memlimit, 0, nullptr, xz.data(), &in_pos, xz_size,
                                      out.data(), &out_pos, out.size()),
            LZMA_OK);
  EXPECT_EQ(out, data);
  // A stream whose check does not match is refused.
  xz[xz_size - 13] ^= 1;  // in the 8-byte CRC64 before the index and footer
  in_pos = out_pos = 0;
  EXPECT_NE(lzma_stream_buffer_decode(&memlimit, 0, nullptr, xz.data(), &in_pos, xz_size,
                                      out.data(), &out_pos, out.size()),
            LZMA_OK);
}

}  // namespace
