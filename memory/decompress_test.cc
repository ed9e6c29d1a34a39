#include "memory/decompress.h"

#include <fcntl.h>
#include <lz4frame.h>
#include <lzma.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <cstdint>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace unwindd::memory {
namespace {

// Core-like contents: some data, a long run of zero pages (an untouched
// stack), then more data at an odd size.
std::vector<uint8_t> CoreLike() {
  std::vector<uint8_t> v(64 * 1024 + 8 * 1024 * 1024 + 777, 0);
  for (size_t i = 0; i < 64 * 1024; ++i) v[i] = static_cast<uint8_t>(i * 7);
  for (size_t i = v.size() - 777; i < v.size(); ++i) v[i] = 0x5a;
  return v;
}

std::vector<uint8_t> Zstd(const std::vector<uint8_t>& in) {
  std::vector<uint8_t> out(ZSTD_compressBound(in.size()));
  size_t n = ZSTD_compress(out.data(), out.size(), in.data(), in.size(), 3);
  EXPECT_FALSE(ZSTD_isError(n));
  out.resize(n);
  return out;
}

std::vector<uint8_t> Xz(const std::vector<uint8_t>& in) {
  std::vector<uint8_t> out(lzma_stream_buffer_bound(in.size()));
  size_t pos = 0;
  EXPECT_EQ(lzma_easy_buffer_encode(1, LZMA_CHECK_CRC64, nullptr, in.data(),
                                    in.size(), out.data(), &pos, out.size()),
            LZMA_OK);
  out.resize(pos);
  return out;
}

std::vector<uint8_t> Lz4(const std::vector<uint8_t>& in) {
  std::vector<uint8_t> out(LZ4F_compressFrameBound(in.size(), nullptr));
  size_t n =
      LZ4F_compressFrame(out.data(), out.size(), in.data(), in.size(), nullptr);
  EXPECT_FALSE(LZ4F_isError(n));
  out.resize(n);
  return out;
}

std::string WriteTemp(const std::vector<uint8_t>& bytes) {
  std::string path = ::testing::TempDir() + "/dc_XXXXXX";
  int fd = mkostemp(path.data(), O_CLOEXEC);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(write(fd, bytes.data(), bytes.size()),
            static_cast<ssize_t>(bytes.size()));
  close(fd);
  return path;
}

std::vector<uint8_t> ReadAll(int fd) {
  struct stat st;
  EXPECT_EQ(fstat(fd, &st), 0);
  std::vector<uint8_t> v(st.st_size);
  EXPECT_EQ(pread(fd, v.data(), v.size(), 0), static_cast<ssize_t>(v.size()));
  return v;
}

DecompressOptions Options() {
  DecompressOptions o;
  o.temp_dir = ::testing::TempDir();
  return o;
}

struct Case {
  const char* name;
  std::vector<uint8_t> (*compress)(const std::vector<uint8_t>&);
  Compression format;
};

class DecompressTest : public ::testing::TestWithParam<Case> {};

TEST_P(DecompressTest, RoundTripsAndLeavesHoles) {
  const std::vector<uint8_t> plain = CoreLike();
  std::string path = WriteTemp(GetParam().compress(plain));
  absl::StatusOr<OpenedFile> f = OpenMaybeDecompressed(path, Options());
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->compression, GetParam().format);
  EXPECT_EQ(f->size, plain.size());
  EXPECT_EQ(ReadAll(f->fd.get()), plain);
  struct stat st;
  ASSERT_EQ(fstat(f->fd.get(), &st), 0);
  // The 8 MiB of zeros are a hole: far fewer blocks than the logical size.
  EXPECT_LT(static_cast<uint64_t>(st.st_blocks) * 512, uint64_t{1} << 20);
}

TEST_P(DecompressTest, ConcatenatedStreams) {
  std::vector<uint8_t> a(5000, 'a'), b(3000, 'b');
  std::vector<uint8_t> both = GetParam().compress(a);
  std::vector<uint8_t> second = GetParam().compress(b);
  both.insert(both.end(), second.begin(), second.end());
  absl::StatusOr<OpenedFile> f =
      OpenMaybeDecompressed(WriteTemp(both), Options());
  ASSERT_TRUE(f.ok()) << f.status();
  std::vector<uint8_t> expect = a;
  expect.insert(expect.end(), b.begin(), b.end());
  EXPECT_EQ(ReadAll(f->fd.get()), expect);
}

TEST_P(DecompressTest, TruncatedInputIsDataLoss) {
  std::vector<uint8_t> c = GetParam().compress(CoreLike());
  c.resize(c.size() / 2);
  absl::StatusOr<OpenedFile> f = OpenMaybeDecompressed(WriteTemp(c), Options());
  EXPECT_TRUE(absl::IsDataLoss(f.status())) << f.status();
}

TEST_P(DecompressTest, CorruptInputIsDataLoss) {
  std::vector<uint8_t> c = GetParam().compress(CoreLike());
  for (size_t i = 16; i < c.size(); i += 97) c[i] ^= 0x55;
  absl::StatusOr<OpenedFile> f = OpenMaybeDecompressed(WriteTemp(c), Options());
  EXPECT_TRUE(absl::IsDataLoss(f.status())) << f.status();
}

TEST_P(DecompressTest, OutputLimitIsResourceExhausted) {
  std::string path = WriteTemp(GetParam().compress(CoreLike()));
  DecompressOptions o = Options();
  o.max_output_bytes = 1 << 20;
  absl::StatusOr<OpenedFile> f = OpenMaybeDecompressed(path, o);
  EXPECT_TRUE(absl::IsResourceExhausted(f.status())) << f.status();
}

INSTANTIATE_TEST_SUITE_P(
    Formats, DecompressTest,
    ::testing::Values(Case{"zstd", Zstd, Compression::kZstd},
                      Case{"xz", Xz, Compression::kXz},
                      Case{"lz4", Lz4, Compression::kLz4}),
    [](const ::testing::TestParamInfo<Case>& i) { return i.param.name; });

TEST(DecompressPlainTest, UncompressedFileIsOpenedAsIs) {
  std::vector<uint8_t> plain = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 0};
  absl::StatusOr<OpenedFile> f =
      OpenMaybeDecompressed(WriteTemp(plain), Options());
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->compression, Compression::kNone);
  EXPECT_EQ(f->size, plain.size());
}

TEST(DecompressPlainTest, MissingFileIsNotFound) {
  EXPECT_TRUE(absl::IsNotFound(
      OpenMaybeDecompressed("/nonexistent/core.zst", Options()).status()));
}

TEST(DecompressPlainTest, DetectsMagic) {
  EXPECT_EQ(DetectCompression({0x28, 0xb5, 0x2f, 0xfd, 0}), Compression::kZstd);
  EXPECT_EQ(DetectCompression({0xfd, '7', 'z', 'X', 'Z', 0}), Compression::kXz);
  EXPECT_EQ(DetectCompression({0x04, 0x22, 0x4d, 0x18}), Compression::kLz4);
  EXPECT_EQ(DetectCompression({0x28, 0xb5}), Compression::kNone);
  EXPECT_EQ(DetectCompression({}), Compression::kNone);
}

}  // namespace
}  // namespace unwindd::memory
