#include "memory/memory.h"

#include <cstring>

#include "absl/strings/str_format.h"

namespace unwindd::memory {

absl::Status Memory::ReadFully(uint64_t addr, absl::Span<uint8_t> dst) {
  size_t done = 0;
  while (done < dst.size()) {
    // Wrap-around of the address space is unreadable, not a huge read.
    if (addr + done < addr) {
      return absl::OutOfRangeError(
          absl::StrFormat("address range wraps at 0x%x", addr));
    }
    size_t n = Read(addr + done, dst.subspan(done));
    if (n == 0) {
      return absl::OutOfRangeError(
          absl::StrFormat("cannot read memory at 0x%x", addr + done));
    }
    done += n;
  }
  return absl::OkStatus();
}

void Memory::ReadMany(absl::Span<ReadRequest> requests) {
  for (ReadRequest& r : requests) r.done = Read(r.addr, r.dst);
}

namespace {

template <typename T>
absl::StatusOr<T> ReadLittleEndian(Memory& m, uint64_t addr) {
  uint8_t buf[sizeof(T)];
  absl::Status s = m.ReadFully(addr, absl::MakeSpan(buf));
  if (!s.ok()) return s;
  T v = 0;
  for (size_t i = 0; i < sizeof(T); ++i) v |= static_cast<T>(buf[i]) << (8 * i);
  return v;
}

}  // namespace

absl::StatusOr<uint8_t> Memory::ReadU8(uint64_t addr) {
  return ReadLittleEndian<uint8_t>(*this, addr);
}
absl::StatusOr<uint16_t> Memory::ReadU16(uint64_t addr) {
  return ReadLittleEndian<uint16_t>(*this, addr);
}
absl::StatusOr<uint32_t> Memory::ReadU32(uint64_t addr) {
  return ReadLittleEndian<uint32_t>(*this, addr);
}
absl::StatusOr<uint64_t> Memory::ReadU64(uint64_t addr) {
  return ReadLittleEndian<uint64_t>(*this, addr);
}
absl::StatusOr<uint64_t> Memory::ReadWord(uint64_t addr, int size) {
  if (size == 4) {
    absl::StatusOr<uint32_t> v = ReadU32(addr);
    if (!v.ok()) return v.status();
    return uint64_t{*v};
  }
  if (size == 8) return ReadU64(addr);
  return absl::InvalidArgumentError(absl::StrFormat("bad word size %d", size));
}

}  // namespace unwindd::memory
