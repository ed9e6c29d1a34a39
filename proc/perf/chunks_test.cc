#include "proc/perf/chunks.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <string>
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

// The modes under test: reads on the caller, and read ahead with room
// for 300 bytes in front of each chunk.
ChunkedInput::Options Mode(bool ahead, size_t chunk_bytes, size_t max_free) {
  return {.chunk_bytes = chunk_bytes,
          .max_free_chunks = max_free,
          .read_ahead_headroom = ahead ? size_t{300} : 0};
}

TEST(ChunkedInput, RecordsThatStraddleReadsAreContiguous) {
  std::vector<uint8_t> bytes(10000);
  std::iota(bytes.begin(), bytes.end(), 0);
  for (bool ahead : {false, true}) {
    for (size_t step : {1, 7, 100, 4096}) {
      ChunkedInput in(From(bytes, step), Mode(ahead, 1024, 2));
      size_t at = 0;
      // Records of 300 bytes: a chunk's end cuts many of them.
      while (true) {
        absl::StatusOr<bool> got = in.Ensure(300);
        ASSERT_TRUE(got.ok());
        if (!*got) break;
        ASSERT_EQ(std::memcmp(in.data(), bytes.data() + at, 300), 0) << at << " " << ahead;
        in.Consume(300);
        at += 300;
      }
      EXPECT_EQ(at, 9900u);
      EXPECT_EQ(in.available(), 100u);  // the partial last one
      EXPECT_EQ(std::memcmp(in.data(), bytes.data() + 9900, 100), 0);
    }
  }
}

TEST(ChunkedInput, AHeldChunkIsNeverOverwritten) {
  std::vector<uint8_t> bytes(64 * 1024);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 31 + 7);
  for (bool ahead : {false, true}) {
    ChunkedInput in(From(bytes, 5000), Mode(ahead, 4096, 8));
    struct Held {
      std::shared_ptr<uint8_t> chunk;
      const uint8_t* data;
      size_t at;
    };
    std::vector<Held> held;
    size_t at = 0;
    while (*in.Ensure(250)) {
      if ((at / 250) % 5 == 0) held.push_back({in.chunk(), in.data(), at});
      in.Consume(250);
      at += 250;
    }
    for (const Held& h : held) {
      EXPECT_EQ(std::memcmp(h.data, bytes.data() + h.at, 250), 0) << h.at;
    }
    EXPECT_GT(in.in_use_bytes(), 4096u);  // the held ones and the current one
    held.clear();
    EXPECT_LE(in.in_use_bytes(), 2 * 4096u);
  }
}

TEST(ChunkedInput, MoreThanAChunkIsAnError) {
  std::vector<uint8_t> bytes(100);
  ChunkedInput in(From(bytes, 100), Mode(false, 64, 1));
  EXPECT_FALSE(in.Ensure(65).ok());
}

TEST(ChunkedInput, ReadAheadMoreThanTheHeadroomIsAnError) {
  std::vector<uint8_t> bytes(1000);
  ChunkedInput in(From(bytes, 1000), Mode(true, 1024, 1));
  EXPECT_TRUE(*in.Ensure(300));
  in.Consume(700);  // of the 724 bytes after the first chunk's headroom
  absl::StatusOr<bool> got = in.Ensure(301);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ChunkedInput, ReadErrorsAreStatuses) {
  for (bool ahead : {false, true}) {
    int calls = 0;
    ChunkedInput in(
        [&calls](uint8_t*, size_t) -> ssize_t {
          ++calls;
          errno = EIO;
          return -1;
        },
        Mode(ahead, 1024, 1));
    absl::StatusOr<bool> got = in.Ensure(8);
    EXPECT_FALSE(got.ok());
    EXPECT_NE(got.status().message().find("Input/output error"), std::string::npos) << got.status();
    if (ahead) {
      // Read ahead, the error stays: the source is not read again.
      EXPECT_FALSE(in.Ensure(8).ok());
      EXPECT_EQ(calls, 1);
    }
  }
}

TEST(ChunkedInput, AnErrorReadAheadIsOnlyReportedWhenItsBytesAreNeeded) {
  std::vector<uint8_t> bytes(2000, 7);
  size_t pos = 0;
  ChunkedInput in(
      [&](uint8_t* dst, size_t n) -> ssize_t {
        if (pos == bytes.size()) {
          errno = EIO;
          return -1;
        }
        const size_t take = std::min(n, bytes.size() - pos);
        std::memcpy(dst, bytes.data() + pos, take);
        pos += take;
        return static_cast<ssize_t>(take);
      },
      Mode(true, 1024, 4));
  size_t at = 0;
  absl::StatusOr<bool> got;
  while ((got = in.Ensure(100)).ok() && *got) {
    in.Consume(100);
    at += 100;
  }
  EXPECT_EQ(at, 2000u);  // every byte before the error
  EXPECT_FALSE(got.ok());
}

// A source over `bytes` whose position the test can move, as ChunkReader
// moves past a payload it does not read.
struct Seekable {
  std::vector<uint8_t> bytes;
  size_t pos = 0;
  ChunkedInput::Source source() {
    return [this](uint8_t* dst, size_t n) -> ssize_t {
      const size_t take = std::min(n, bytes.size() - pos);
      std::memcpy(dst, bytes.data() + pos, take);
      pos += take;
      return static_cast<ssize_t>(take);
    };
  }
};

TEST(ChunkedInput, SkipGoesPastWhatWasReadThenLetsTheCallerMoveTheSource) {
  for (bool ahead : {false, true}) {
    Seekable file;
    file.bytes.resize(100000);
    for (size_t i = 0; i < file.bytes.size(); ++i) file.bytes[i] = static_cast<uint8_t>(i * 13);
    ChunkedInput in(file.source(), Mode(ahead, 1024, 4));
    ASSERT_TRUE(*in.Ensure(100));
    size_t at = 100;
    in.Consume(100);
    // Past what was read: the rest, then (read ahead) the chunk in flight;
    // then nothing is read or being read, and the source moves.
    uint64_t skip = 50000;
    const uint64_t skipped = in.Skip(skip);
    EXPECT_LT(skipped, skip) << ahead;
    EXPECT_EQ(in.available(), 0u);
    EXPECT_EQ(file.pos, at + skipped) << ahead;  // the source is at rest there
    file.pos += skip - skipped;
    at += skip;
    ASSERT_TRUE(*in.Ensure(200));
    EXPECT_EQ(std::memcmp(in.data(), file.bytes.data() + at, 200), 0) << ahead;
    // A skip inside what was read moves nothing else.
    in.Consume(10);
    at += 10;
    EXPECT_EQ(in.Skip(20), 20u);
    at += 20;
    ASSERT_TRUE(*in.Ensure(100));
    EXPECT_EQ(std::memcmp(in.data(), file.bytes.data() + at, 100), 0) << ahead;
  }
}

TEST(ChunkedInput, ReadAheadToTheEndOfALargeInput) {
  // Every byte once, in order, through many chunks, records of every size
  // up to the headroom.
  std::vector<uint8_t> bytes(1 << 20);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 7 + (i >> 9));
  ChunkedInput in(From(bytes, 1 << 20), Mode(true, 4096, 4));
  size_t at = 0;
  size_t n = 1;
  while (*in.Ensure(n)) {
    ASSERT_EQ(std::memcmp(in.data(), bytes.data() + at, n), 0) << at;
    in.Consume(n);
    at += n;
    n = n % 300 + 1;
  }
  EXPECT_EQ(at + in.available(), bytes.size());
}

}  // namespace
}  // namespace unwindd::proc::perf
