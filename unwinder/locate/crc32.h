// The CRC-32 a .gnu_debuglink records for its debug file: the ISO 3309 /
// ITU-T V.42 CRC (polynomial 0xedb88320 reflected, initial and final XOR
// 0xffffffff), which is zlib's crc32() and what binutils'
// bfd_calc_gnu_debuglink_crc32 computes over the whole file.
//
//   absl::StatusOr<uint32_t> crc = FileCrc32(fd, kMaxCrcFileBytes);
//
// The file is read in 1 MiB chunks (it is never held whole), up to
// `max_bytes`: a debug file larger than that is not verified at all
// (ResourceExhausted) rather than read forever.
#ifndef UNWINDD_UNWINDER_LOCATE_CRC32_H_
#define UNWINDD_UNWINDER_LOCATE_CRC32_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace unwindd::locate {

inline constexpr uint64_t kMaxCrcFileBytes = uint64_t{8} << 30;

uint32_t Crc32(absl::Span<const uint8_t> bytes, uint32_t crc = 0);

// CRC-32 of the whole file open as `fd` (read with pread from offset 0).
absl::StatusOr<uint32_t> FileCrc32(int fd, uint64_t max_bytes);

}  // namespace unwindd::locate

#endif  // UNWINDD_UNWINDER_LOCATE_CRC32_H_
