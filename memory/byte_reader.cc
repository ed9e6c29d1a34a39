#include "memory/byte_reader.h"

#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"

namespace unwindd::memory {

absl::Status ByteReader::Truncated(size_t want) const {
  return absl::DataLossError(absl::StrFormat(
      "truncated data: need %u bytes at offset %u of %u (address 0x%x)", want,
      pos_, data_.size(), addr()));
}

absl::Status ByteReader::Seek(size_t offset) {
  if (offset > data_.size()) {
    return absl::DataLossError(absl::StrFormat(
        "offset %u past the end of %u bytes", offset, data_.size()));
  }
  pos_ = offset;
  return absl::OkStatus();
}

absl::Status ByteReader::Skip(uint64_t n) {
  if (n > remaining()) return Truncated(n);
  pos_ += n;
  return absl::OkStatus();
}

template <typename T>
absl::StatusOr<T> ByteReader::Fixed() {
  if (remaining() < sizeof(T)) return Truncated(sizeof(T));
  uint64_t v = 0;
  for (size_t i = 0; i < sizeof(T); ++i) {
    v |= static_cast<uint64_t>(data_[pos_ + i]) << (8 * i);
  }
  pos_ += sizeof(T);
  return static_cast<T>(v);
}

absl::StatusOr<uint8_t> ByteReader::U8() { return Fixed<uint8_t>(); }
absl::StatusOr<uint16_t> ByteReader::U16() { return Fixed<uint16_t>(); }
absl::StatusOr<uint32_t> ByteReader::U32() { return Fixed<uint32_t>(); }
absl::StatusOr<uint64_t> ByteReader::U64() { return Fixed<uint64_t>(); }
absl::StatusOr<int8_t> ByteReader::S8() { return Fixed<int8_t>(); }
absl::StatusOr<int16_t> ByteReader::S16() { return Fixed<int16_t>(); }
absl::StatusOr<int32_t> ByteReader::S32() { return Fixed<int32_t>(); }
absl::StatusOr<int64_t> ByteReader::S64() { return Fixed<int64_t>(); }

absl::StatusOr<uint64_t> ByteReader::ULEB128() {
  uint64_t result = 0;
  for (int shift = 0;; shift += 7) {
    if (AtEnd()) return Truncated(1);
    uint8_t byte = data_[pos_++];
    uint64_t bits = byte & 0x7f;
    if (shift >= 64 ? bits != 0 : (shift > 57 && (bits >> (64 - shift)) != 0)) {
      return absl::DataLossError(
          absl::StrFormat("ULEB128 overflows 64 bits at 0x%x", addr()));
    }
    if (shift < 64) result |= bits << shift;
    if ((byte & 0x80) == 0) return result;
    // Redundant 0x80 padding is legal, but bound it so a hostile run of
    // continuation bytes cannot keep us here.
    if (shift > 16 * 7) {
      return absl::DataLossError(
          absl::StrFormat("ULEB128 too long at 0x%x", addr()));
    }
  }
}

absl::StatusOr<int64_t> ByteReader::SLEB128() {
  uint64_t result = 0;
  int shift = 0;
  uint8_t byte = 0;
  do {
    if (AtEnd()) return Truncated(1);
    if (shift > 16 * 7) {
      return absl::DataLossError(
          absl::StrFormat("SLEB128 too long at 0x%x", addr()));
    }
    byte = data_[pos_++];
    const uint64_t bits = byte & 0x7f;
    if (shift < 63) {
      result |= bits << shift;
    } else {
      // Past bit 63 only sign-extension bits may follow: bit 63 itself at
      // shift 63, then all-zero or all-one groups matching it.
      const uint64_t fill =
          shift == 63 ? bits : ((result >> 63) != 0 ? 0x7f : 0);
      if ((fill != 0 && fill != 0x7f) || bits != fill) {
        return absl::DataLossError(
            absl::StrFormat("SLEB128 overflows 64 bits at 0x%x", addr()));
      }
      if (shift == 63) result |= bits << 63;
    }
    shift += 7;
  } while (byte & 0x80);
  if (shift < 64 && (byte & 0x40)) result |= ~uint64_t{0} << shift;
  return static_cast<int64_t>(result);
}

absl::StatusOr<absl::Span<const uint8_t>> ByteReader::Bytes(uint64_t n) {
  if (n > remaining()) return Truncated(n);
  absl::Span<const uint8_t> out = data_.subspan(pos_, n);
  pos_ += n;
  return out;
}

absl::StatusOr<absl::string_view> ByteReader::CString() {
  for (size_t i = pos_; i < data_.size(); ++i) {
    if (data_[i] == 0) {
      absl::string_view s(reinterpret_cast<const char*>(data_.data() + pos_),
                          i - pos_);
      pos_ = i + 1;
      return s;
    }
  }
  return absl::DataLossError(
      absl::StrFormat("unterminated string at 0x%x", addr()));
}

}  // namespace unwindd::memory
