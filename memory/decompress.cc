// Streaming decompression of zstd, xz and lz4 (frame format) into a sparse,
// unlinked temporary file. Each decoder reads kInputChunk bytes at a time
// and hands kOutputChunk-sized pieces to SparseWriter, so memory stays
// bounded by those buffers plus the decoder's own window (zstd's default
// limit of 2^27 bytes, xz's kXzMemLimit, lz4's 4 MiB blocks).
#include "memory/decompress.h"

#include <fcntl.h>
#include <lz4frame.h>
#include <lzma.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace unwindd::memory {
namespace {

constexpr size_t kInputChunk = 256 * 1024;
constexpr size_t kOutputChunk = 1024 * 1024;
// Holes are made at this granularity: the smallest page of every supported
// arch, so a core's untouched pages become holes again.
constexpr size_t kBlock = 4096;
// xz's dictionary for its highest preset is 64 MiB; this leaves room for
// any preset xz(1) writes while bounding a hostile header.
constexpr uint64_t kXzMemLimit = uint64_t{256} << 20;

absl::Status Errno(int err, absl::string_view what) {
  return absl::ErrnoToStatus(err, what);
}

// Writes a stream of bytes at increasing offsets, skipping all-zero blocks
// (they read back as zeros from the hole the final ftruncate leaves).
class SparseWriter {
 public:
  SparseWriter(int fd, uint64_t max_bytes) : fd_(fd), max_bytes_(max_bytes) {}

  absl::Status Write(const uint8_t* data, size_t size) {
    if (size > max_bytes_ - pos_) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "decompressed data exceeds the limit of %d bytes", max_bytes_));
    }
    static const uint8_t kZeros[kBlock] = {};
    size_t i = 0;
    while (i < size) {
      // Blocks are aligned to the output offset, not to `data`.
      size_t block = std::min<size_t>(kBlock - (pos_ + i) % kBlock, size - i);
      if (std::memcmp(data + i, kZeros, block) == 0) {
        i += block;
        continue;
      }
      size_t run_end = i + block;
      while (run_end < size) {
        size_t b = std::min<size_t>(kBlock, size - run_end);
        if (std::memcmp(data + run_end, kZeros, b) == 0) break;
        run_end += b;
      }
      absl::Status s = PwriteAll(data + i, run_end - i, pos_ + i);
      if (!s.ok()) return s;
      i = run_end;
    }
    pos_ += size;
    return absl::OkStatus();
  }

  absl::Status Finish() {
    if (ftruncate(fd_, static_cast<off_t>(pos_)) != 0) {
      return Errno(errno, "ftruncate of the decompressed core");
    }
    return absl::OkStatus();
  }

 private:
  absl::Status PwriteAll(const uint8_t* p, size_t n, uint64_t offset) {
    while (n > 0) {
      ssize_t w = pwrite(fd_, p, n, static_cast<off_t>(offset));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0 && (errno == ENOSPC || errno == EDQUOT || errno == EFBIG)) {
        return absl::ResourceExhaustedError(absl::StrFormat(
            "no space for the decompressed core at offset %d: %s", offset,
            strerror(errno)));
      }
      if (w <= 0) return Errno(errno, "writing the decompressed core");
      p += w;
      n -= static_cast<size_t>(w);
      offset += static_cast<uint64_t>(w);
    }
    return absl::OkStatus();
  }

  const int fd_;
  const uint64_t max_bytes_;
  uint64_t pos_ = 0;
};

// A decoder's buffer, left uninitialised: read(2) or the decoder writes
// every byte before it is read, and zeroing 1.25 MiB per file was most of
// the cost of opening a small compressed core.
class Chunk {
 public:
  explicit Chunk(size_t size) : bytes_(new uint8_t[size]), size_(size) {}
  uint8_t* data() { return bytes_.get(); }
  size_t size() const { return size_; }

 private:
  std::unique_ptr<uint8_t[]> bytes_;
  size_t size_;
};

// read() with EINTR retried; 0 at EOF.
absl::StatusOr<size_t> ReadChunk(int fd, Chunk& buf) {
  while (true) {
    ssize_t n = read(fd, buf.data(), buf.size());
    if (n >= 0) return static_cast<size_t>(n);
    if (errno != EINTR) return Errno(errno, "reading the compressed core");
  }
}

absl::Status Corrupt(Compression c, uint64_t in_offset, absl::string_view why) {
  return absl::DataLossError(
      absl::StrFormat("%s data is corrupt near input offset %d: %s",
                      CompressionName(c), in_offset, why));
}

absl::Status Truncated(Compression c, uint64_t in_size) {
  return absl::DataLossError(absl::StrFormat(
      "%s data is truncated: input ends at offset %d inside a frame",
      CompressionName(c), in_size));
}

absl::Status DecodeZstd(int in_fd, SparseWriter& out) {
  std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> dctx(ZSTD_createDCtx(),
                                                          ZSTD_freeDCtx);
  if (dctx == nullptr) return absl::ResourceExhaustedError("ZSTD_createDCtx");
  Chunk in_buf(kInputChunk), out_buf(kOutputChunk);
  uint64_t in_offset = 0;
  size_t last = 0;  // 0: at a frame boundary
  while (true) {
    absl::StatusOr<size_t> n = ReadChunk(in_fd, in_buf);
    if (!n.ok()) return n.status();
    if (*n == 0) break;
    ZSTD_inBuffer in = {in_buf.data(), *n, 0};
    ZSTD_outBuffer o;
    do {
      o = {out_buf.data(), out_buf.size(), 0};
      last = ZSTD_decompressStream(dctx.get(), &o, &in);
      if (ZSTD_isError(last)) {
        return Corrupt(Compression::kZstd, in_offset + in.pos,
                       ZSTD_getErrorName(last));
      }
      absl::Status s = out.Write(out_buf.data(), o.pos);
      if (!s.ok()) return s;
    } while (in.pos < in.size || o.pos == o.size);
    in_offset += *n;
  }
  if (last != 0) return Truncated(Compression::kZstd, in_offset);
  return absl::OkStatus();
}

absl::Status DecodeXz(int in_fd, SparseWriter& out) {
  lzma_stream strm = LZMA_STREAM_INIT;
  // CONCATENATED: `cat a.xz b.xz` is valid xz, as xz(1) reads it.
  lzma_ret r = lzma_stream_decoder(&strm, kXzMemLimit, LZMA_CONCATENATED);
  if (r != LZMA_OK) return absl::ResourceExhaustedError("lzma_stream_decoder");
  std::unique_ptr<lzma_stream, void (*)(lzma_stream*)> guard(&strm, lzma_end);
  Chunk in_buf(kInputChunk), out_buf(kOutputChunk);
  bool eof = false;
  while (true) {
    if (strm.avail_in == 0 && !eof) {
      absl::StatusOr<size_t> n = ReadChunk(in_fd, in_buf);
      if (!n.ok()) return n.status();
      strm.next_in = in_buf.data();
      strm.avail_in = *n;
      eof = *n == 0;
    }
    strm.next_out = out_buf.data();
    strm.avail_out = out_buf.size();
    r = lzma_code(&strm, eof ? LZMA_FINISH : LZMA_RUN);
    absl::Status s = out.Write(out_buf.data(), out_buf.size() - strm.avail_out);
    if (!s.ok()) return s;
    if (r == LZMA_STREAM_END) return absl::OkStatus();
    if (r == LZMA_OK) continue;
    if (r == LZMA_MEMLIMIT_ERROR) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "xz data needs more than %d bytes of decoder memory", kXzMemLimit));
    }
    if (r == LZMA_BUF_ERROR && eof) {
      return Truncated(Compression::kXz, strm.total_in);
    }
    return Corrupt(Compression::kXz, strm.total_in,
                   absl::StrCat("lzma_code returned ", static_cast<int>(r)));
  }
}

absl::Status DecodeLz4(int in_fd, SparseWriter& out) {
  LZ4F_dctx* raw = nullptr;
  if (LZ4F_isError(LZ4F_createDecompressionContext(&raw, LZ4F_VERSION))) {
    return absl::ResourceExhaustedError("LZ4F_createDecompressionContext");
  }
  std::unique_ptr<LZ4F_dctx, LZ4F_errorCode_t (*)(LZ4F_dctx*)> dctx(
      raw, LZ4F_freeDecompressionContext);
  Chunk in_buf(kInputChunk), out_buf(kOutputChunk);
  uint64_t in_offset = 0;
  size_t last = 0;  // 0: at a frame boundary
  while (true) {
    absl::StatusOr<size_t> n = ReadChunk(in_fd, in_buf);
    if (!n.ok()) return n.status();
    if (*n == 0) break;
    size_t pos = 0;
    while (pos < *n) {
      size_t dst_size = out_buf.size();
      size_t src_size = *n - pos;
      last = LZ4F_decompress(dctx.get(), out_buf.data(), &dst_size,
                             in_buf.data() + pos, &src_size, nullptr);
      if (LZ4F_isError(last)) {
        return Corrupt(Compression::kLz4, in_offset + pos,
                       LZ4F_getErrorName(last));
      }
      absl::Status s = out.Write(out_buf.data(), dst_size);
      if (!s.ok()) return s;
      // A call that neither consumes nor produces would loop forever.
      if (src_size == 0 && dst_size == 0) {
        return Corrupt(Compression::kLz4, in_offset + pos, "no progress");
      }
      pos += src_size;
    }
    in_offset += *n;
  }
  // Drain what the last block left in the context's buffer.
  for (int i = 0; last != 0 && i < 1024; ++i) {
    size_t dst_size = out_buf.size();
    size_t src_size = 0;
    last = LZ4F_decompress(dctx.get(), out_buf.data(), &dst_size, nullptr,
                           &src_size, nullptr);
    if (LZ4F_isError(last) || dst_size == 0) break;
    absl::Status s = out.Write(out_buf.data(), dst_size);
    if (!s.ok()) return s;
  }
  if (last != 0) return Truncated(Compression::kLz4, in_offset);
  return absl::OkStatus();
}

std::string TempDir(const DecompressOptions& options) {
  if (!options.temp_dir.empty()) return options.temp_dir;
  if (const char* t = std::getenv("TMPDIR"); t != nullptr && *t != '\0') {
    return t;
  }
  struct stat st;
  if (stat("/var/tmp", &st) == 0 && S_ISDIR(st.st_mode)) return "/var/tmp";
  return "/tmp";
}

// An unlinked file in `dir`: O_TMPFILE where the filesystem has it, else a
// named file removed right after it is created.
absl::StatusOr<ScopedFd> CreateTempFile(const std::string& dir) {
  int fd;
  do {
    fd = open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  } while (fd < 0 && errno == EINTR);
  if (fd >= 0) return ScopedFd(fd);
  std::string templ = absl::StrCat(dir, "/unwindd-core-XXXXXX");
  fd = mkostemp(templ.data(), O_CLOEXEC);
  if (fd < 0) {
    return Errno(errno, absl::StrCat("creating a temporary file in ", dir));
  }
  unlink(templ.c_str());
  return ScopedFd(fd);
}

}  // namespace

absl::string_view CompressionName(Compression c) {
  switch (c) {
    case Compression::kNone:
      return "none";
    case Compression::kZstd:
      return "zstd";
    case Compression::kXz:
      return "xz";
    case Compression::kLz4:
      return "lz4";
  }
  return "unknown";
}

Compression DetectCompression(absl::Span<const uint8_t> h) {
  auto starts = [&](std::initializer_list<uint8_t> magic) {
    return h.size() >= magic.size() &&
           std::equal(magic.begin(), magic.end(), h.begin());
  };
  if (starts({0x28, 0xb5, 0x2f, 0xfd})) return Compression::kZstd;  // RFC 8878
  if (starts({0xfd, '7', 'z', 'X', 'Z', 0x00})) return Compression::kXz;
  if (starts({0x04, 0x22, 0x4d, 0x18})) return Compression::kLz4;  // frame
  return Compression::kNone;
}

absl::StatusOr<ScopedFd> DecompressToTempFile(
    int in_fd, Compression format, const DecompressOptions& options) {
  absl::StatusOr<ScopedFd> tmp = CreateTempFile(TempDir(options));
  if (!tmp.ok()) return tmp.status();
  SparseWriter out(tmp->get(), options.max_output_bytes);
  absl::Status s;
  switch (format) {
    case Compression::kZstd:
      s = DecodeZstd(in_fd, out);
      break;
    case Compression::kXz:
      s = DecodeXz(in_fd, out);
      break;
    case Compression::kLz4:
      s = DecodeLz4(in_fd, out);
      break;
    case Compression::kNone:
      return absl::InvalidArgumentError("input is not compressed");
  }
  if (!s.ok()) return s;
  s = out.Finish();
  if (!s.ok()) return s;
  return std::move(*tmp);
}

absl::StatusOr<OpenedFile> OpenMaybeDecompressed(
    const std::string& path, const DecompressOptions& options) {
  ScopedFd fd = OpenNamedFile(path.c_str());
  if (!fd.valid()) return Errno(errno, absl::StrCat("cannot open ", path));
  struct stat st;
  if (fstat(fd.get(), &st) != 0)
    return Errno(errno, absl::StrCat("stat ", path));
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, " is not a regular file"));
  }
  uint8_t head[8] = {};
  ssize_t n;
  do {
    n = pread(fd.get(), head, sizeof(head), 0);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return Errno(errno, absl::StrCat("reading ", path));
  OpenedFile out;
  out.compression = DetectCompression(absl::MakeConstSpan(head, n));
  if (out.compression == Compression::kNone) {
    out.fd = std::move(fd);
    out.size = static_cast<uint64_t>(st.st_size);
    return out;
  }
  absl::StatusOr<ScopedFd> plain =
      DecompressToTempFile(fd.get(), out.compression, options);
  if (!plain.ok()) {
    return absl::Status(plain.status().code(),
                        absl::StrCat(path, ": ", plain.status().message()));
  }
  if (fstat(plain->get(), &st) != 0)
    return Errno(errno, "stat of temporary file");
  out.fd = std::move(*plain);
  out.size = static_cast<uint64_t>(st.st_size);
  return out;
}

}  // namespace unwindd::memory
