#include "service/cli/profile/gzip.h"

#include <cstdint>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "gtest/gtest.h"

namespace unwindd::profile {
namespace {

// Bytes that do not compress to nothing: a small linear congruential
// sequence, longer than zlib's 64 KiB output pieces.
std::string Noise(size_t n) {
  std::string out(n, '\0');
  uint32_t x = 12345;
  for (char& c : out) {
    x = x * 1103515245 + 12345;
    c = static_cast<char>(x >> 24);
  }
  return out;
}

TEST(GzipTest, RoundTrips) {
  for (const std::string& data :
       {std::string(), std::string("hello"), std::string(1 << 20, 'a'),
        Noise(300 * 1024)}) {
    absl::StatusOr<std::string> gz = GzipCompress(data);
    ASSERT_TRUE(gz.ok()) << gz.status();
    // RFC 1952 §2.3.1: ID1 ID2 = 1f 8b, CM = 8 (deflate).
    ASSERT_GE(gz->size(), 18u);
    EXPECT_EQ(static_cast<uint8_t>((*gz)[0]), 0x1f);
    EXPECT_EQ(static_cast<uint8_t>((*gz)[1]), 0x8b);
    EXPECT_EQ((*gz)[2], 8);
    absl::StatusOr<std::string> back = GzipDecompress(*gz, data.size());
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, data);
  }
}

// GzipWriter fed in pieces writes what GzipCompress writes for the whole:
// pieces of one byte, of odd sizes, larger than zlib's output pieces, and
// empty ones.
TEST(GzipTest, PiecesCompressAsTheWhole) {
  const std::string data = Noise(200 * 1024) + std::string(100 * 1024, 'b') + Noise(7);
  absl::StatusOr<std::string> whole = GzipCompress(data);
  ASSERT_TRUE(whole.ok()) << whole.status();
  for (size_t piece : {size_t{1}, size_t{7}, size_t{4096}, size_t{70000}, data.size()}) {
    GzipWriter gz;
    for (size_t at = 0; at < data.size(); at += piece) {
      gz.Write(absl::string_view(data).substr(at, piece));
      gz.Write("");
    }
    absl::StatusOr<std::string> out = std::move(gz).Finish();
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(*out, *whole) << "pieces of " << piece;
  }
  absl::StatusOr<std::string> empty = GzipWriter().Finish();
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(*empty, *GzipCompress(""));
}

TEST(GzipTest, RefusesOutputPastTheLimit) {
  absl::StatusOr<std::string> gz = GzipCompress(std::string(100000, 'a'));
  ASSERT_TRUE(gz.ok());
  EXPECT_TRUE(GzipDecompress(*gz, 100000).ok());
  EXPECT_EQ(GzipDecompress(*gz, 99999).status().code(),
            absl::StatusCode::kResourceExhausted);
}

TEST(GzipTest, TruncatedOrCorruptIsDataLoss) {
  absl::StatusOr<std::string> gz = GzipCompress(Noise(5000));
  ASSERT_TRUE(gz.ok());
  EXPECT_EQ(
      GzipDecompress(gz->substr(0, gz->size() - 4), 1 << 20).status().code(),
      absl::StatusCode::kDataLoss);
  EXPECT_EQ(GzipDecompress("", 1 << 20).status().code(),
            absl::StatusCode::kDataLoss);
  std::string bad = *gz;
  bad[bad.size() - 6] ^= 0x55;  // the CRC-32 trailer no longer matches
  EXPECT_EQ(GzipDecompress(bad, 1 << 20).status().code(),
            absl::StatusCode::kDataLoss);
  EXPECT_EQ(GzipDecompress("not gzip at all", 1 << 20).status().code(),
            absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace unwindd::profile
