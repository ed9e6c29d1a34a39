#include "proc/perf/compressed.h"

#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace unwindd::proc::perf {

struct RecordDecompressor::Stream {
  ~Stream() { ZSTD_freeDCtx(ctx); }
  ZSTD_DCtx* ctx = nullptr;
};

RecordDecompressor::RecordDecompressor() : stream_(std::make_unique<Stream>()) {}

RecordDecompressor::~RecordDecompressor() = default;

absl::StatusOr<std::shared_ptr<const Decompressed>> RecordDecompressor::Next(
    absl::Span<const uint8_t> compressed) {
  if (broken_) {
    return absl::DataLossError("the compressed stream broke at an earlier record");
  }
  if (stream_->ctx == nullptr) {
    stream_->ctx = ZSTD_createDCtx();
    if (stream_->ctx == nullptr) return absl::ResourceExhaustedError("ZSTD_createDCtx");
  }
  auto out = std::make_shared<Decompressed>();
  // Room for a usual flush at once; grown (up to kMaxBytes) while zstd has
  // more to give.
  out->capacity_ =
      std::min(kMaxBytes, rest_.size() + std::max<size_t>(4 * compressed.size(), 64 << 10));
  out->data_.reset(new uint8_t[out->capacity_]);
  if (!rest_.empty()) std::memcpy(out->data_.get(), rest_.data(), rest_.size());
  out->size_ = rest_.size();
  rest_.clear();
  ZSTD_inBuffer in = {compressed.data(), compressed.size(), 0};
  while (true) {
    ZSTD_outBuffer o = {out->data_.get() + out->size_, out->capacity_ - out->size_, 0};
    const size_t r = ZSTD_decompressStream(stream_->ctx, &o, &in);
    out->size_ += o.pos;
    if (ZSTD_isError(r)) {
      broken_ = true;
      return absl::DataLossError(absl::StrCat("zstd: ", ZSTD_getErrorName(r)));
    }
    // All input used and nothing held back for want of room: done.
    if (in.pos == in.size && o.pos < o.size) break;
    if (out->size_ < out->capacity_) continue;
    if (out->capacity_ >= kMaxBytes) {
      broken_ = true;
      return absl::DataLossError(
          absl::StrCat("a compressed record decompresses to more than ", kMaxBytes, " bytes"));
    }
    const size_t grown = std::min(kMaxBytes, 2 * out->capacity_);
    std::unique_ptr<uint8_t[]> bigger(new uint8_t[grown]);
    std::memcpy(bigger.get(), out->data_.get(), out->size_);
    out->data_ = std::move(bigger);
    out->capacity_ = grown;
  }
  return std::shared_ptr<const Decompressed>(std::move(out));
}

void RecordDecompressor::KeepRest(absl::Span<const uint8_t> rest) {
  rest_.assign(rest.begin(), rest.end());
}

}  // namespace unwindd::proc::perf
