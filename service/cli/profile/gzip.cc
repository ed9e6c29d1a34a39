#include "service/cli/profile/gzip.h"

#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"

namespace unwindd::profile {
namespace {

// zlib counts in uInt (32 bits); larger inputs are fed in pieces.
constexpr size_t kMaxChunk = std::numeric_limits<uInt>::max();
constexpr size_t kOutChunk = 64 * 1024;
// windowBits 15 (the largest window) + 16: a gzip header and trailer
// instead of zlib's (zlib.h, deflateInit2 / inflateInit2).
constexpr int kGzipWindowBits = 15 + 16;

absl::Status ZlibError(const char* what, int code, const z_stream& zs) {
  return absl::InternalError(
      absl::StrFormat("zlib %s: %d (%s)", what, code,
                      zs.msg != nullptr ? zs.msg : "no message"));
}

}  // namespace

struct GzipWriter::State {
  z_stream zs{};
  bool initialized = false;
};

GzipWriter::GzipWriter() : state_(std::make_unique<State>()) {
  // Level 1, as Go's runtime/pprof writes its profiles (gzip.BestSpeed):
  // a profile is mostly varints that compress well at any level, and the
  // default level cost more than the rest of writing it.
  const int rc = deflateInit2(&state_->zs, Z_BEST_SPEED, Z_DEFLATED, kGzipWindowBits,
                              /*memLevel=*/8, Z_DEFAULT_STRATEGY);
  if (rc != Z_OK) {
    status_ = ZlibError("deflateInit2", rc, state_->zs);
    return;
  }
  state_->initialized = true;
}

GzipWriter::~GzipWriter() {
  if (state_->initialized) deflateEnd(&state_->zs);
}

void GzipWriter::Write(absl::string_view data) {
  if (!data.empty()) Deflate(data, /*finish=*/false);
}

absl::StatusOr<std::string> GzipWriter::Finish() && {
  Deflate({}, /*finish=*/true);
  if (!status_.ok()) return status_;
  return std::move(out_);
}

void GzipWriter::Deflate(absl::string_view data, bool finish) {
  if (!status_.ok()) return;
  z_stream& zs = state_->zs;
  size_t pos = 0;
  int flush = Z_NO_FLUSH;
  do {
    const size_t in = std::min(data.size() - pos, kMaxChunk);
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data() + pos));
    zs.avail_in = static_cast<uInt>(in);
    pos += in;
    flush = finish && pos == data.size() ? Z_FINISH : Z_NO_FLUSH;
    int rc = Z_OK;
    do {  // until deflate has taken all of this piece (and, last, finished)
      const size_t old = out_.size();
      out_.resize(old + kOutChunk);
      zs.next_out = reinterpret_cast<Bytef*>(out_.data() + old);
      zs.avail_out = kOutChunk;
      rc = deflate(&zs, flush);
      out_.resize(old + kOutChunk - zs.avail_out);
      if (rc == Z_STREAM_ERROR) {
        status_ = ZlibError("deflate", rc, zs);
        return;
      }
    } while (zs.avail_out == 0 || (flush == Z_FINISH && rc != Z_STREAM_END));
  } while (pos < data.size());
}

absl::StatusOr<std::string> GzipCompress(absl::string_view data) {
  GzipWriter gz;
  gz.Write(data);
  return std::move(gz).Finish();
}

absl::StatusOr<std::string> GzipDecompress(absl::string_view data,
                                           size_t max_size) {
  z_stream zs{};
  int rc = inflateInit2(&zs, kGzipWindowBits);
  if (rc != Z_OK) return ZlibError("inflateInit2", rc, zs);
  std::string out;
  size_t pos = 0;
  rc = Z_OK;
  while (rc != Z_STREAM_END) {
    if (zs.avail_in == 0) {
      if (pos == data.size()) {
        inflateEnd(&zs);
        return absl::DataLossError(
            absl::StrFormat("gzip data truncated after %u bytes", data.size()));
      }
      const size_t in = std::min(data.size() - pos, kMaxChunk);
      zs.next_in =
          reinterpret_cast<Bytef*>(const_cast<char*>(data.data() + pos));
      zs.avail_in = static_cast<uInt>(in);
      pos += in;
    }
    // Room for one byte past the limit, so that output of exactly
    // max_size bytes still lets inflate reach the end of the stream.
    const size_t old = out.size();
    const size_t cap = max_size == SIZE_MAX ? max_size : max_size + 1;
    const size_t room = std::min(kOutChunk, cap - old);
    out.resize(old + room);
    zs.next_out = reinterpret_cast<Bytef*>(out.data() + old);
    zs.avail_out = static_cast<uInt>(room);
    rc = inflate(&zs, Z_NO_FLUSH);
    out.resize(old + room - zs.avail_out);
    if (out.size() > max_size) {
      inflateEnd(&zs);
      return absl::ResourceExhaustedError(absl::StrFormat(
          "gzip data decompresses to more than %u bytes", max_size));
    }
    if (rc == Z_NEED_DICT || rc == Z_DATA_ERROR || rc == Z_STREAM_ERROR) {
      const std::string msg = zs.msg != nullptr ? zs.msg : "malformed";
      inflateEnd(&zs);
      return absl::DataLossError("gzip data: " + msg);
    }
    if (rc == Z_MEM_ERROR) {
      inflateEnd(&zs);
      return absl::ResourceExhaustedError("zlib inflate: out of memory");
    }
    // Z_BUF_ERROR: no progress possible with this buffer; the loop gives
    // more input or more room (or reports the truncation / size limit).
  }
  inflateEnd(&zs);
  return out;
}

}  // namespace unwindd::profile
