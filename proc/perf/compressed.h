// The records of a `perf record -z` recording: PERF_RECORD_COMPRESSED (and
// PERF_RECORD_COMPRESSED2, which adds the payload's size) hold perf's own
// records compressed with zstd, one stream over the whole recording that
// each compressed record flushes (tools/perf/util/zstd.c). A record may
// straddle two compressed records: the part of it at the end of one is
// kept and put in front of what the next decompresses to, as perf's
// reader does (perf_session__process_compressed_event).
//
//   RecordDecompressor d;
//   absl::StatusOr<std::shared_ptr<const Decompressed>> out = d.Next(payload);
//   // ... the whole records at the front of (*out)->bytes(), then:
//   d.KeepRest(the bytes after the last whole record);
#ifndef UNWINDD_PROC_PERF_COMPRESSED_H_
#define UNWINDD_PROC_PERF_COMPRESSED_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace unwindd::proc::perf {

// Bytes decompressed from one compressed record (not zero-filled first).
class Decompressed {
 public:
  absl::Span<const uint8_t> bytes() const { return {data_.get(), size_}; }

 private:
  friend class RecordDecompressor;
  std::unique_ptr<uint8_t[]> data_;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

class RecordDecompressor {
 public:
  // What one compressed record may decompress to, with the part of a
  // record kept from the one before. perf flushes the stream after each
  // read of a ring buffer (HEADER_COMPRESSED's mmap_len: 528 KiB by
  // default, at most the buffer perf record -m asks for); past this bound a
  // record is refused rather than allowed to grow a buffer without end.
  static constexpr size_t kMaxBytes = size_t{64} << 20;

  RecordDecompressor();
  ~RecordDecompressor();
  RecordDecompressor(const RecordDecompressor&) = delete;
  RecordDecompressor& operator=(const RecordDecompressor&) = delete;

  // The bytes kept by KeepRest, then what `compressed` decompresses to, in
  // a buffer of their own (records handed on may point into it and hold
  // it). DataLoss for input zstd refuses (the stream's state is then
  // undefined: later records are refused too) or past kMaxBytes.
  absl::StatusOr<std::shared_ptr<const Decompressed>> Next(
      absl::Span<const uint8_t> compressed);
  // The start of a record Next's bytes end inside: put in front of the
  // next ones.
  void KeepRest(absl::Span<const uint8_t> rest);
  // Bytes kept and not yet used (a recording should not end with any).
  size_t pending() const { return rest_.size(); }

 private:
  struct Stream;
  std::unique_ptr<Stream> stream_;
  bool broken_ = false;
  std::vector<uint8_t> rest_;
};

}  // namespace unwindd::proc::perf

#endif  // UNWINDD_PROC_PERF_COMPRESSED_H_
