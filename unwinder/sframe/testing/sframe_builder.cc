#include "unwinder/sframe/testing/sframe_builder.h"

namespace unwindd::unwinder::sframe::testing {
namespace {

class Out {
 public:
  explicit Out(bool big) : big_(big) {}
  void Put(uint64_t v, int size) {
    for (int i = 0; i < size; ++i) {
      const int shift = 8 * (big_ ? size - 1 - i : i);
      bytes_.push_back(static_cast<uint8_t>(v >> shift));
    }
  }
  size_t size() const { return bytes_.size(); }
  std::vector<uint8_t>& bytes() { return bytes_; }

 private:
  bool big_;
  std::vector<uint8_t> bytes_;
};

int StartSize(uint8_t fre_type) {
  return fre_type == kFreTypeAddr1 ? 1 : fre_type == kFreTypeAddr2 ? 2 : 4;
}

uint8_t SizeCode(int word_size) {
  return word_size == 1 ? 0 : word_size == 2 ? 1 : word_size == 4 ? 2 : 3;
}

void PutFres(Out& o, const FdeSpec& f) {
  for (const FreSpec& fre : f.fres) {
    o.Put(fre.start, StartSize(f.fre_type));
    const uint8_t info = static_cast<uint8_t>(
        (fre.base_sp ? 1 : 0) | (fre.words.size() & 0xf) << 1 |
        SizeCode(fre.word_size) << 5 | (fre.mangled_ra ? 0x80 : 0));
    o.Put(info, 1);
    const int size = fre.word_size == 3 ? 1 : fre.word_size;
    for (int64_t w : fre.words) o.Put(static_cast<uint64_t>(w), size);
  }
}

uint8_t Info(const FdeSpec& f) {
  return static_cast<uint8_t>((f.fre_type & 0xf) | (f.pc_type & 1) << 4 |
                              (f.pauth_key_b ? 0x20 : 0) |
                              (f.signal_frame ? 0x80 : 0));
}

}  // namespace

std::vector<uint8_t> BuildSframe(const SectionSpec& s) {
  // FRE sub-section first, to know each function's FRE offset.
  Out fres(s.big_endian);
  std::vector<uint32_t> fre_offsets;
  uint32_t total_fres = 0;
  for (const FdeSpec& f : s.fdes) {
    fre_offsets.push_back(static_cast<uint32_t>(fres.size()));
    if (s.version >= kVersion3) {  // §2.3.2 attributes precede the FREs
      fres.Put(f.num_fres_override.value_or(f.fres.size()), 2);
      fres.Put(Info(f), 1);
      fres.Put(f.fde_type, 1);
      fres.Put(f.rep_size, 1);
    }
    PutFres(fres, f);
    total_fres += f.fres.size();
  }
  const size_t fde_size = s.version == kVersion1   ? kFdeSizeV1
                          : s.version == kVersion2 ? kFdeSizeV2
                                                   : kFdeIndexSizeV3;
  const uint32_t fde_bytes = static_cast<uint32_t>(s.fdes.size() * fde_size);

  Out o(s.big_endian);
  o.Put(kMagic, 2);
  o.Put(s.version, 1);
  o.Put(s.flags, 1);
  o.Put(s.abi, 1);
  o.Put(static_cast<uint8_t>(s.fixed_fp), 1);
  o.Put(static_cast<uint8_t>(s.fixed_ra), 1);
  o.Put(s.auxhdr.size(), 1);
  o.Put(s.num_fdes_override.value_or(s.fdes.size()), 4);
  o.Put(total_fres, 4);
  o.Put(s.fre_len_override.value_or(fres.size()), 4);
  o.Put(0, 4);          // sfh_fdeoff
  o.Put(fde_bytes, 4);  // sfh_freoff
  for (uint8_t b : s.auxhdr) o.Put(b, 1);

  const bool pcrel = s.version >= kVersion2 && (s.flags & kFlagFuncStartPcRel);
  for (size_t i = 0; i < s.fdes.size(); ++i) {
    const FdeSpec& f = s.fdes[i];
    const uint64_t field = s.vaddr + (pcrel ? o.size() : 0);
    const int64_t start = static_cast<int64_t>(f.func_start - field);
    const uint32_t fre_off = f.fre_off_override.value_or(fre_offsets[i]);
    if (s.version >= kVersion3) {
      o.Put(static_cast<uint64_t>(start), 8);
      o.Put(f.size, 4);
      o.Put(fre_off, 4);
      continue;
    }
    o.Put(static_cast<uint32_t>(start), 4);
    o.Put(f.size, 4);
    o.Put(fre_off, 4);
    o.Put(f.num_fres_override.value_or(f.fres.size()), 4);
    o.Put(Info(f), 1);
    if (s.version == kVersion2) {
      o.Put(f.rep_size, 1);
      o.Put(0, 2);
    }
  }
  for (uint8_t b : fres.bytes()) o.Put(b, 1);
  return o.bytes();
}

}  // namespace unwindd::unwinder::sframe::testing
