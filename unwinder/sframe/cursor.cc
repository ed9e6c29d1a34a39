#include "unwinder/sframe/cursor.h"

#include "absl/strings/str_format.h"

namespace unwindd::unwinder::sframe {

absl::Status Cursor::Seek(uint64_t offset) {
  if (offset > data_.size()) {
    return absl::DataLossError(absl::StrFormat(
        "SFrame offset 0x%x is past the end of the %u-byte section", offset,
        data_.size()));
  }
  pos_ = offset;
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> Cursor::Unsigned(int size) {
  if (size != 1 && size != 2 && size != 4 && size != 8) {
    return absl::InternalError(absl::StrFormat("bad field size %d", size));
  }
  if (pos_ > data_.size() ||
      data_.size() - pos_ < static_cast<uint64_t>(size)) {
    return absl::DataLossError(absl::StrFormat(
        "SFrame section truncated: %d-byte field at offset 0x%x of a %u-byte "
        "section",
        size, pos_, data_.size()));
  }
  uint64_t v = 0;
  for (int i = 0; i < size; ++i) {
    const uint64_t byte = data_[pos_ + i];
    v |= byte << (8 * (big_endian_ ? size - 1 - i : i));
  }
  pos_ += size;
  return v;
}

absl::StatusOr<int64_t> Cursor::Signed(int size) {
  absl::StatusOr<uint64_t> u = Unsigned(size);
  if (!u.ok()) return u.status();
  if (size == 8) return static_cast<int64_t>(*u);
  const uint64_t sign = uint64_t{1} << (8 * size - 1);
  return static_cast<int64_t>((*u ^ sign) - sign);
}

absl::StatusOr<uint8_t> Cursor::U8() {
  absl::StatusOr<uint64_t> v = Unsigned(1);
  if (!v.ok()) return v.status();
  return static_cast<uint8_t>(*v);
}

absl::StatusOr<uint16_t> Cursor::U16() {
  absl::StatusOr<uint64_t> v = Unsigned(2);
  if (!v.ok()) return v.status();
  return static_cast<uint16_t>(*v);
}

absl::StatusOr<uint32_t> Cursor::U32() {
  absl::StatusOr<uint64_t> v = Unsigned(4);
  if (!v.ok()) return v.status();
  return static_cast<uint32_t>(*v);
}

absl::StatusOr<int8_t> Cursor::S8() {
  absl::StatusOr<int64_t> v = Signed(1);
  if (!v.ok()) return v.status();
  return static_cast<int8_t>(*v);
}

absl::StatusOr<int32_t> Cursor::S32() {
  absl::StatusOr<int64_t> v = Signed(4);
  if (!v.ok()) return v.status();
  return static_cast<int32_t>(*v);
}

absl::StatusOr<int64_t> Cursor::S64() { return Signed(8); }

}  // namespace unwindd::unwinder::sframe
