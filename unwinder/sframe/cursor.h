// A bounds-checked reader over an SFrame section in either byte order
// (SFrame §2.1.1: the magic number tells which). Offsets are section
// offsets; reading past the end is DataLoss naming the offset, never a crash.
//
//   Cursor c(section_bytes, /*big_endian=*/false);
//   c.Seek(28);
//   absl::StatusOr<uint32_t> n = c.U32();
#ifndef UNWINDD_UNWINDER_SFRAME_CURSOR_H_
#define UNWINDD_UNWINDER_SFRAME_CURSOR_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace unwindd::unwinder::sframe {

class Cursor {
 public:
  Cursor(absl::Span<const uint8_t> data, bool big_endian)
      : data_(data), big_endian_(big_endian) {}

  uint64_t offset() const { return pos_; }
  uint64_t size() const { return data_.size(); }
  absl::Status Seek(uint64_t offset);

  // `size` bytes (1, 2, 4 or 8) as an unsigned value.
  absl::StatusOr<uint64_t> Unsigned(int size);
  // `size` bytes sign-extended.
  absl::StatusOr<int64_t> Signed(int size);

  absl::StatusOr<uint8_t> U8();
  absl::StatusOr<uint16_t> U16();
  absl::StatusOr<uint32_t> U32();
  absl::StatusOr<int8_t> S8();
  absl::StatusOr<int32_t> S32();
  absl::StatusOr<int64_t> S64();

 private:
  absl::Span<const uint8_t> data_;
  bool big_endian_ = false;
  uint64_t pos_ = 0;
};

}  // namespace unwindd::unwinder::sframe

#endif  // UNWINDD_UNWINDER_SFRAME_CURSOR_H_
