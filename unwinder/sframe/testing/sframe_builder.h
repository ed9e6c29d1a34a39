// Assembles SFrame sections byte by byte for tests: any version (1-3), either
// byte order, any FDE/FRE encoding, and deliberately broken layouts.
//
//   SectionSpec s;                       // v2, little-endian, AMD64, sorted
//   s.fdes.push_back({.func_start = 0x1000, .size = 0x20,
//                     .fres = {{.start = 0, .words = {8}},
//                              {.start = 1, .words = {16}}}});
//   std::vector<uint8_t> bytes = BuildSframe(s);
//   auto section = SframeSection::Parse(bytes, s.vaddr);
//
// Function starts are file addresses; the builder encodes them relative to
// the section (v1, v2 without the PCREL flag) or to the FDE's own field.
#ifndef UNWINDD_UNWINDER_SFRAME_TESTING_SFRAME_BUILDER_H_
#define UNWINDD_UNWINDER_SFRAME_TESTING_SFRAME_BUILDER_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "unwinder/sframe/format.h"

namespace unwindd::unwinder::sframe::testing {

struct FreSpec {
  uint32_t start = 0;
  bool base_sp = true;
  std::vector<int64_t> words;  // encoded with word_size bytes each
  int word_size = 1;           // 1, 2 or 4 (3 encodes the reserved code 3)
  bool mangled_ra = false;
};

struct FdeSpec {
  uint64_t func_start = 0;
  uint32_t size = 0;
  uint8_t fre_type = kFreTypeAddr1;
  uint8_t pc_type = kPcTypeInc;
  uint8_t rep_size = 0;
  uint8_t fde_type = kFdeTypeDefault;  // v3 only
  bool pauth_key_b = false;
  bool signal_frame = false;  // v3 only
  std::vector<FreSpec> fres;
  // Overrides for broken sections.
  std::optional<uint32_t> num_fres_override;
  std::optional<uint32_t> fre_off_override;
};

struct SectionSpec {
  uint8_t version = kVersion2;
  uint8_t flags = kFlagFdeSorted;
  uint8_t abi = kAbiAmd64LittleEndian;
  int8_t fixed_fp = 0;
  int8_t fixed_ra = -8;
  std::vector<uint8_t> auxhdr;
  bool big_endian = false;
  uint64_t vaddr = 0x10000;  // the section's sh_addr
  std::vector<FdeSpec> fdes;
  // Overrides for broken sections.
  std::optional<uint32_t> num_fdes_override;
  std::optional<uint32_t> fre_len_override;
};

std::vector<uint8_t> BuildSframe(const SectionSpec& spec);

}  // namespace unwindd::unwinder::sframe::testing

#endif  // UNWINDD_UNWINDER_SFRAME_TESTING_SFRAME_BUILDER_H_
