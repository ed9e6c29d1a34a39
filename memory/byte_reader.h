// A bounds-checked cursor over bytes already in our own memory (an ELF
// section mapped from a file, a CFA program, a DWARF expression).
//
// `base` is the address the first byte has in the *file's* address space
// (the section's sh_addr, i.e. before load bias), so that pc-relative pointer
// encodings can be resolved: addr() = base + offset().
//
//   ByteReader r(section_bytes, section_vaddr);
//   absl::StatusOr<uint64_t> len = r.ULEB128();
//
// Reading past the end is DataLoss (malformed input), never a crash.
#ifndef UNWINDD_MEMORY_BYTE_READER_H_
#define UNWINDD_MEMORY_BYTE_READER_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace unwindd::memory {

class ByteReader {
 public:
  ByteReader() = default;
  explicit ByteReader(absl::Span<const uint8_t> data, uint64_t base = 0)
      : data_(data), base_(base) {}

  size_t offset() const { return pos_; }
  uint64_t addr() const { return base_ + pos_; }
  uint64_t base() const { return base_; }
  size_t size() const { return data_.size(); }
  size_t remaining() const { return data_.size() - pos_; }
  bool AtEnd() const { return pos_ >= data_.size(); }
  absl::Span<const uint8_t> data() const { return data_; }

  // Moves to an absolute offset (<= size()).
  absl::Status Seek(size_t offset);
  absl::Status Skip(uint64_t n);

  absl::StatusOr<uint8_t> U8();
  absl::StatusOr<uint16_t> U16();
  absl::StatusOr<uint32_t> U32();
  absl::StatusOr<uint64_t> U64();
  absl::StatusOr<int8_t> S8();
  absl::StatusOr<int16_t> S16();
  absl::StatusOr<int32_t> S32();
  absl::StatusOr<int64_t> S64();
  // LEB128 (DWARF 5 §7.6). Values that do not fit in 64 bits are DataLoss.
  absl::StatusOr<uint64_t> ULEB128();
  absl::StatusOr<int64_t> SLEB128();
  // `n` bytes as a span into the underlying data; advances past them.
  absl::StatusOr<absl::Span<const uint8_t>> Bytes(uint64_t n);
  // A NUL-terminated string (without the NUL); advances past the NUL.
  absl::StatusOr<absl::string_view> CString();

 private:
  absl::Status Truncated(size_t want) const;
  template <typename T>
  absl::StatusOr<T> Fixed();

  absl::Span<const uint8_t> data_;
  uint64_t base_ = 0;
  size_t pos_ = 0;
};

}  // namespace unwindd::memory

#endif  // UNWINDD_MEMORY_BYTE_READER_H_
