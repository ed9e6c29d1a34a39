#include "unwinder/locate/xz.h"

#include <lzma.h>

#include <algorithm>

#include "absl/strings/str_format.h"

namespace unwindd::locate {
namespace {

constexpr uint64_t kDecoderMemLimit = uint64_t{256} << 20;

}  // namespace

absl::StatusOr<std::vector<uint8_t>> DecompressXz(absl::Span<const uint8_t> in,
                                                  uint64_t max_out) {
  if (in.empty()) return absl::DataLossError("empty xz stream");
  lzma_stream strm = LZMA_STREAM_INIT;
  lzma_ret r = lzma_stream_decoder(&strm, kDecoderMemLimit, LZMA_CONCATENATED);
  if (r != LZMA_OK) {
    return absl::InternalError(absl::StrFormat("lzma_stream_decoder: %d", r));
  }
  std::vector<uint8_t> out;
  // Grows by doubling up to max_out (+1 byte to notice going past it).
  out.resize(std::min<uint64_t>(std::max<uint64_t>(in.size() * 4, 4096), max_out + 1));
  strm.next_in = in.data();
  strm.avail_in = in.size();
  strm.next_out = out.data();
  strm.avail_out = out.size();
  absl::Status status;
  while (true) {
    // LZMA_FINISH: all input is here; LZMA_CONCATENATED then reports the
    // end of the last stream as LZMA_STREAM_END.
    r = lzma_code(&strm, LZMA_FINISH);
    if (r == LZMA_STREAM_END) break;
    if (r == LZMA_OK && strm.avail_out == 0) {
      if (out.size() > max_out) {
        status = absl::ResourceExhaustedError(absl::StrFormat(
            "xz stream decompresses to more than %u bytes", max_out));
        break;
      }
      size_t used = out.size();
      out.resize(std::min<uint64_t>(uint64_t{used} * 2, max_out + 1));
      strm.next_out = out.data() + used;
      strm.avail_out = out.size() - used;
      continue;
    }
    if (r == LZMA_MEMLIMIT_ERROR) {
      status = absl::ResourceExhaustedError(
          "xz stream needs more decoder memory than allowed");
    } else {
      status = absl::DataLossError(
          absl::StrFormat("bad or truncated xz stream (lzma error %d)", r));
    }
    break;
  }
  const uint64_t produced = strm.total_out;
  lzma_end(&strm);
  if (!status.ok()) return status;
  if (produced > max_out) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "xz stream decompresses to more than %u bytes", max_out));
  }
  out.resize(produced);
  return out;
}

}  // namespace unwindd::locate
