// Compressed files as crash pipelines store them (systemd-coredump's
// core.*.zst, .xz, .lz4), turned into something pread() works on: the
// decompressed bytes go, one bounded buffer at a time, into an unlinked
// temporary file, with runs of zero pages left as holes. The whole
// decompressed file is never held in memory, and kernel cores (mostly holes
// for untouched stack pages) stay small on disk.
//
//   absl::StatusOr<OpenedFile> f = OpenMaybeDecompressed(path, {});
//   // f->fd is the plain file itself, or the decompressed temporary file.
//
// The format is recognized by its magic bytes, not by the file name.
#ifndef UNWINDD_MEMORY_DECOMPRESS_H_
#define UNWINDD_MEMORY_DECOMPRESS_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "memory/scoped_fd.h"

namespace unwindd::memory {

enum class Compression { kNone, kZstd, kXz, kLz4 };

absl::string_view CompressionName(Compression c);  // "none", "zstd", ...

// From the first bytes of a file (6 are enough for every format).
Compression DetectCompression(absl::Span<const uint8_t> head);

struct DecompressOptions {
  // Where the temporary file goes; empty: $TMPDIR, else /var/tmp (usually
  // disk, where /tmp may be RAM), else /tmp.
  std::string temp_dir;
  // Decompressed bytes allowed (the logical size, holes included);
  // ResourceExhausted beyond it, so a decompression bomb cannot fill the
  // disk.
  uint64_t max_output_bytes = uint64_t{1} << 40;
};

// Decompresses all of `in` (read from its current offset) into a new
// unlinked temporary file. DataLoss naming the input offset for corrupt or
// truncated input; ResourceExhausted past max_output_bytes or when the disk
// is full.
absl::StatusOr<ScopedFd> DecompressToTempFile(int in_fd, Compression format,
                                              const DecompressOptions& options);

struct OpenedFile {
  ScopedFd fd;
  Compression compression = Compression::kNone;
  uint64_t size = 0;  // of the (decompressed) contents
};

// Opens `path` read-only; if it is compressed, returns the decompressed
// temporary file instead. NotFound / PermissionDenied for the path itself.
absl::StatusOr<OpenedFile> OpenMaybeDecompressed(
    const std::string& path, const DecompressOptions& options);

}  // namespace unwindd::memory

#endif  // UNWINDD_MEMORY_DECOMPRESS_H_
