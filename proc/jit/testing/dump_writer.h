// Test helpers: jitdump files as runtimes write them, and a function's code
// with the .eh_frame and .eh_frame_hdr a runtime would give for it.
//
//   DumpWriter w;
//   std::vector<uint8_t> eh, hdr;
//   Cfi(Code().size(), &eh, &hdr);
//   w.Unwinding(eh, hdr, 1).Load(2000, 0x7f0000001000, Code(), 7, "fib");
//   absl::StatusOr<JitDump> d = ParseJitDump(w.Bytes());
#ifndef UNWINDD_PROC_JIT_TESTING_DUMP_WRITER_H_
#define UNWINDD_PROC_JIT_TESTING_DUMP_WRITER_H_

#include <elf.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "proc/jit/jitdump.h"

namespace unwindd::proc::jit::testing {

// A jitdump as a runtime writes it, little-endian (or swapped).
class DumpWriter {
 public:
  explicit DumpWriter(bool swap = false) : swap_(swap) {
    U32(kJitDumpMagic).U32(1).U32(40).U32(EM_X86_64).U32(0).U32(4242).U64(1000).U64(0);
  }
  DumpWriter& Load(uint64_t time, uint64_t addr, const std::vector<uint8_t>& code,
                   uint64_t index, const std::string& name) {
    const size_t size = 16 + 40 + name.size() + 1 + code.size();
    Prefix(0, size, time).U32(4242).U32(4243).U64(addr).U64(addr).U64(code.size()).U64(index);
    Bytes(name.data(), name.size() + 1);
    Bytes(code.data(), code.size());
    return *this;
  }
  DumpWriter& Move(uint64_t time, uint64_t from, uint64_t to, uint64_t size, uint64_t index) {
    Prefix(1, 16 + 48, time).U32(4242).U32(4243).U64(to).U64(from).U64(to).U64(size).U64(index);
    return *this;
  }
  DumpWriter& Unwinding(const std::vector<uint8_t>& eh_frame, const std::vector<uint8_t>& hdr,
                        uint64_t mapped) {
    const size_t data = eh_frame.size() + hdr.size();
    const size_t size = 16 + 24 + ((data + 7) & ~size_t{7});
    Prefix(4, size, 0).U64(data).U64(hdr.size()).U64(mapped);
    Bytes(eh_frame.data(), eh_frame.size());
    Bytes(hdr.data(), hdr.size());
    out_.resize(out_.size() + (size - 16 - 24 - data), 0);
    return *this;
  }
  DumpWriter& Close() { return Prefix(3, 16, 0); }
  std::shared_ptr<const std::vector<uint8_t>> Bytes() const {
    return std::make_shared<const std::vector<uint8_t>>(out_);
  }
  std::vector<uint8_t>& raw() { return out_; }

 private:
  DumpWriter& Prefix(uint32_t id, size_t size, uint64_t time) {
    return U32(id).U32(static_cast<uint32_t>(size)).U64(time);
  }
  DumpWriter& U32(uint32_t v) {
    if (swap_) v = __builtin_bswap32(v);
    return Bytes(&v, 4);
  }
  DumpWriter& U64(uint64_t v) {
    if (swap_) v = __builtin_bswap64(v);
    return Bytes(&v, 8);
  }
  DumpWriter& Bytes(const void* p, size_t n) {
    const uint8_t* b = static_cast<const uint8_t*>(p);
    out_.insert(out_.end(), b, b + n);
    return *this;
  }
  bool swap_;
  std::vector<uint8_t> out_;
};

// push %rbp; mov %rsp,%rbp; nop...; pop %rbp; ret
inline std::vector<uint8_t> Code() {
  std::vector<uint8_t> c = {0x55, 0x48, 0x89, 0xe5};
  c.resize(40, 0x90);
  c.push_back(0x5d);
  c.push_back(0xc3);
  return c;
}

inline void Le32(std::vector<uint8_t>& v, uint32_t x) {
  for (int i = 0; i < 4; ++i) v.push_back(static_cast<uint8_t>(x >> (8 * i)));
}

// .eh_frame for Code() placed at ALIGN_8(code + size) (where its pc-relative
// pc_begin resolves, jitdump.h), and its .eh_frame_hdr after it.
inline void Cfi(size_t code_size, std::vector<uint8_t>* eh, std::vector<uint8_t>* hdr) {
  // CIE: version 1, "zR", code align 1, data align -8, RA r16, aug data
  // (FDE encoding pcrel|sdata4), def_cfa r7+8, offset r16 at cfa-8.
  std::vector<uint8_t> cie = {1, 'z', 'R', 0, 1, 0x78, 16, 1, 0x1b, 0x0c, 7, 8, 0x90, 1};
  while ((cie.size() + 4) % 8) cie.push_back(0);  // DW_CFA_nop
  eh->clear();
  Le32(*eh, static_cast<uint32_t>(cie.size() + 4));
  Le32(*eh, 0);  // CIE id
  eh->insert(eh->end(), cie.begin(), cie.end());
  const size_t fde_at = eh->size();
  // FDE: CIE pointer, pc_begin (pcrel), pc_range, aug length 0,
  // advance 1 (after push), def_cfa_offset 16, offset r6 at cfa-16,
  // advance 3 (after mov), def_cfa_register r6.
  std::vector<uint8_t> fde;
  Le32(fde, static_cast<uint32_t>(fde_at + 4));  // back to the CIE
  const size_t eh_start = (code_size + 7) & ~size_t{7};  // relative to the code
  const int64_t pc_field = static_cast<int64_t>(eh_start + fde_at + 8);
  Le32(fde, static_cast<uint32_t>(-pc_field));
  Le32(fde, static_cast<uint32_t>(code_size));
  fde.insert(fde.end(), {0, 0x41, 0x0e, 16, 0x86, 2, 0x43, 0x0d, 6});
  while ((fde.size() + 4) % 8) fde.push_back(0);
  Le32(*eh, static_cast<uint32_t>(fde.size()));
  eh->insert(eh->end(), fde.begin(), fde.end());
  Le32(*eh, 0);  // terminator
  // .eh_frame_hdr: version 1, eh_frame_ptr pcrel|sdata4, count udata4,
  // table datarel|sdata4; one entry (code start, FDE), relative to the hdr.
  const int64_t hdr_start = static_cast<int64_t>(eh_start + eh->size());
  hdr->clear();
  hdr->insert(hdr->end(), {1, 0x1b, 0x03, 0x3b});
  Le32(*hdr, static_cast<uint32_t>(static_cast<int64_t>(eh_start) - (hdr_start + 4)));
  Le32(*hdr, 1);
  Le32(*hdr, static_cast<uint32_t>(-hdr_start));
  Le32(*hdr, static_cast<uint32_t>(static_cast<int64_t>(eh_start + fde_at) - hdr_start));
}

}  // namespace unwindd::proc::jit::testing

#endif  // UNWINDD_PROC_JIT_TESTING_DUMP_WRITER_H_
