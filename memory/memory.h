// The one interface through which the unwinder reads the target's address
// space (a live process, a core file, a snapshot, or a plain buffer).
//
// Addresses passed to Memory are always in the *target's* address space.
//
//   std::unique_ptr<Memory> mem = memory::CreateProcessMemory(pid);
//   absl::StatusOr<uint64_t> word = mem->ReadU64(sp);
//
// Implementations live in their own files and are reached through factories
// (see memory/factories.h).
#ifndef UNWINDD_MEMORY_MEMORY_H_
#define UNWINDD_MEMORY_MEMORY_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace unwindd::memory {

class Memory {
 public:
  virtual ~Memory() = default;

  // Reads up to dst.size() bytes starting at `addr`. Returns how many bytes of
  // the prefix of dst were filled; 0 means `addr` is unreadable. Partial reads
  // happen at the end of a readable region. Never fails otherwise.
  virtual size_t Read(uint64_t addr, absl::Span<uint8_t> dst) = 0;

  // All of dst or OutOfRange naming the first unreadable address.
  absl::Status ReadFully(uint64_t addr, absl::Span<uint8_t> dst);

  // Little-endian fixed-width reads (every supported arch is little-endian).
  absl::StatusOr<uint8_t> ReadU8(uint64_t addr);
  absl::StatusOr<uint16_t> ReadU16(uint64_t addr);
  absl::StatusOr<uint32_t> ReadU32(uint64_t addr);
  absl::StatusOr<uint64_t> ReadU64(uint64_t addr);
  // A pointer-sized word: 4 or 8 bytes, zero-extended.
  absl::StatusOr<uint64_t> ReadWord(uint64_t addr, int size);

  // Target bytes this memory already holds as one flat copy, starting at or
  // before `addr` and covering it (a snapshot's stack copy), so that a reader
  // can use them in place instead of a virtual Read per word. Empty if there
  // is none. The span stays valid and unchanged while this Memory lives.
  struct HeldBytes {
    uint64_t start = 0;  // target address of bytes[0]
    absl::Span<const uint8_t> bytes;
  };
  virtual HeldBytes HeldBytesAt(uint64_t addr) { return {}; }

  // Several reads at once (the stacks of every thread of a stopped
  // process): each request's `dst` is filled as Read would fill it and
  // `done` says how many bytes were. process_vm_readv memory does them in
  // one system call, one iovec per request; the default reads them one by
  // one.
  struct ReadRequest {
    uint64_t addr = 0;
    absl::Span<uint8_t> dst;
    size_t done = 0;
  };
  virtual void ReadMany(absl::Span<ReadRequest> requests);
};

}  // namespace unwindd::memory

#endif  // UNWINDD_MEMORY_MEMORY_H_
