#include "proc/perf/chunks.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <vector>

#include "gtest/gtest.h"

namespace unwindd::proc::perf {
namespace {

TEST(ChunkPool, RecyclesAndCountsWhatIsHeld) {
  ChunkPool pool(4096, 1);
  std::shared_ptr<uint8_t> a = pool.Take();
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(pool.in_use_bytes(), 4096u);
  uint8_t* first = a.get();
  std::shared_ptr<uint8_t> b = pool.Take();
  EXPECT_EQ(pool.in_use_bytes(), 8192u);
  a.reset();
  EXPECT_EQ(pool.in_use_bytes(), 4096u);
  std::shared_ptr<uint8_t> c = pool.Take();  // the one given back
  EXPECT_EQ(c.get(), first);
  b.reset();
  c.reset();  // only one is kept; the other is freed
  EXPECT_EQ(pool.in_use_bytes(), 0u);
}

TEST(ChunkPool, ChunksMayOutliveThePool) {
  std::shared_ptr<uint8_t> kept;
  {
    ChunkPool pool(size_t{2} << 20, 4);  // huge-page sized
    kept = pool.Take();
    ASSERT_NE(kept, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(kept.get()) % (size_t{2} << 20), 0u);
    std::memset(kept.get(), 0x5a, size_t{2} << 20);
  }
  EXPECT_EQ(kept.get()[(size_t{2} << 20) - 1], 0x5a);
  kept.reset();  // given back to a pool that is gone: freed
}

// A source giving `bytes` at most `step` bytes per read.
ChunkedInput::Source From(const std::vector<uint8_t>& bytes, size_t step) {
  auto pos = std::make_shared<size_t>(0);
  return [&bytes, step, pos](uint8_t* dst, size_t n) -> ssize_t {
    const size_t take = std::min({n, step, bytes.size() - *pos});
    std::memcpy(dst, bytes.data() + *pos, take);
    *pos += take;
    return static_cast<ssize_t>(take);
  };
}

TEST(ChunkedInput, RecordsThatStraddleReadsAreContiguous) {
  std::vector<uint8_t> bytes(10000);
  std::iota(bytes.begin(), bytes.end(), 0);
  for (size_t step : {1, 7, 100, 4096}) {
    ChunkedInput in(From(bytes, step), 1024, 2);
    size_t at = 0;
    // Records of 300 bytes: the chunk's end cuts every fourth.
    while (true) {
      absl::StatusOr<bool> got = in.Ensure(300);
      ASSERT_TRUE(got.ok());
      if (!*got) break;
      ASSERT_EQ(std::memcmp(in.data(), bytes.data() + at, 300), 0) << at;
      in.Consume(300);
      at += 300;
    }
    EXPECT_EQ(at, 9900u);
    EXPECT_EQ(in.available(), 100u);  // the partial last one
    EXPECT_EQ(std::memcmp(in.data(), bytes.data() + 9900, 100), 0);
  }
}

TEST(ChunkedInput, AHeldChunkIsNeverOverwritten) {
  std::vector<uint8_t> bytes(64 * 1024);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 31 + 7);
  ChunkedInput in(From(bytes, 5000), 4096, 8);
  struct Held {
    std::shared_ptr<uint8_t> chunk;
    const uint8_t* data;
    size_t at;
  };
  std::vector<Held> held;
  size_t at = 0;
  while (*in.Ensure(1000)) {
    if ((at / 1000) % 3 == 0) held.push_back({in.chunk(), in.data(), at});
    in.Consume(1000);
    at += 1000;
  }
  for (const Held& h : held) {
    EXPECT_EQ(std::memcmp(h.data, bytes.data() + h.at, 1000), 0) << h.at;
  }
  EXPECT_GT(in.in_use_bytes(), 4096u);  // the held ones and the current one
  held.clear();
  EXPECT_LE(in.in_use_bytes(), 2 * 4096u);
}

TEST(ChunkedInput, MoreThanAChunkIsAnError) {
  std::vector<uint8_t> bytes(100);
  ChunkedInput in(From(bytes, 100), 64, 1);
  EXPECT_FALSE(in.Ensure(65).ok());
}

TEST(ChunkedInput, ReadErrorsAreStatuses) {
  ChunkedInput in([](uint8_t*, size_t) -> ssize_t { errno = EIO; return -1; }, 64, 1);
  absl::StatusOr<bool> got = in.Ensure(8);
  EXPECT_FALSE(got.ok());
}

}  // namespace
}  // namespace unwindd::proc::perf
