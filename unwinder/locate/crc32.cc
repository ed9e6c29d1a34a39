#include "unwinder/locate/crc32.h"

#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/str_format.h"

namespace unwindd::locate {

uint32_t Crc32(absl::Span<const uint8_t> bytes, uint32_t crc) {
  // zlib's length is a uInt: feed it at most 1 GiB at a time.
  while (!bytes.empty()) {
    size_t n = std::min<size_t>(bytes.size(), size_t{1} << 30);
    crc = static_cast<uint32_t>(crc32(crc, bytes.data(), static_cast<uInt>(n)));
    bytes.remove_prefix(n);
  }
  return crc;
}

absl::StatusOr<uint32_t> FileCrc32(int fd, uint64_t max_bytes) {
  struct stat st;
  if (fstat(fd, &st) != 0) {
    return absl::UnavailableError(absl::StrFormat("fstat: %s", strerror(errno)));
  }
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "%u bytes is more than the %u a CRC is computed over", st.st_size,
        max_bytes));
  }
  std::vector<uint8_t> buf(size_t{1} << 20);
  uint32_t crc = 0;
  uint64_t offset = 0;
  // Bounded by max_bytes even if the file grows while we read it.
  while (offset <= max_bytes) {
    ssize_t n = pread(fd, buf.data(), buf.size(), static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return absl::UnavailableError(absl::StrFormat("read: %s", strerror(errno)));
    }
    if (n == 0) return crc;
    crc = Crc32(absl::MakeConstSpan(buf.data(), static_cast<size_t>(n)), crc);
    offset += static_cast<uint64_t>(n);
  }
  return absl::ResourceExhaustedError(
      absl::StrFormat("the file grew past %u bytes while it was read", max_bytes));
}

}  // namespace unwindd::locate
