// liblzma's lzma_crc64 (CRC-64/XZ), for the fully static `unwind` only.
//
// liblzma.a's own lzma_crc64 lives in crc64_fast.o with a constructor,
// crc64_set_func, that runs at every start of a program linking it and asks
// the CPU (two `cpuid`s) whether it has carry-less multiply. On a VM each
// `cpuid` traps to the hypervisor, 3.5-5 us here: two of them cost every
// `unwind` command, `--help` included, ~10 us, for a checksum only an xz
// stream (a compressed core, MiniDebugInfo) ever needs. Linked ahead of
// Debian's static archives (alwayslink), this definition resolves liblzma's
// references to lzma_crc64, so crc64_fast.o and its constructor are never
// pulled in; the rest of liblzma is unchanged. Same contract as lzma.h's:
// `crc` is the value a previous call returned (0 to start).
//
// Slicing-by-8 over tables built at compile time: ~2 GB/s, well above
// what the xz decoder produces.
#include <lzma.h>

#include <array>
#include <cstddef>
#include <cstdint>

namespace {

constexpr uint64_t kPoly = 0xC96C5795D7870F42;  // ECMA-182, reflected

using Tables = std::array<std::array<uint64_t, 256>, 8>;

constexpr Tables MakeTables() {
  Tables t{};
  for (uint64_t b = 0; b < 256; ++b) {
    uint64_t c = b;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ ((c & 1) ? kPoly : 0);
    t[0][b] = c;
  }
  for (int s = 1; s < 8; ++s) {
    for (int b = 0; b < 256; ++b) t[s][b] = (t[s - 1][b] >> 8) ^ t[0][t[s - 1][b] & 0xff];
  }
  return t;
}

constexpr Tables kTables = MakeTables();

}  // namespace

extern "C" uint64_t lzma_crc64(const uint8_t* buf, size_t size, uint64_t crc) lzma_nothrow {
  crc = ~crc;
  for (; size >= 8; size -= 8, buf += 8) {
    uint64_t w = 0;
    for (int i = 7; i >= 0; --i) w = (w << 8) | buf[i];  // little-endian load
    crc ^= w;
    crc = kTables[7][crc & 0xff] ^ kTables[6][(crc >> 8) & 0xff] ^
          kTables[5][(crc >> 16) & 0xff] ^ kTables[4][(crc >> 24) & 0xff] ^
          kTables[3][(crc >> 32) & 0xff] ^ kTables[2][(crc >> 40) & 0xff] ^
          kTables[1][(crc >> 48) & 0xff] ^ kTables[0][crc >> 56];
  }
  for (; size > 0; --size, ++buf) crc = kTables[0][(crc ^ *buf) & 0xff] ^ (crc >> 8);
  return ~crc;
}
