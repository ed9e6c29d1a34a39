// Issue 14 "bounded work" for Module: a compressed section (SHF_COMPRESSED
// .debug_frame) whose header claims a huge decompressed size is ignored,
// not handed to libelf, which would allocate that size before inflating.
#include <elf.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "unwinder/module.h"

namespace unwindd::unwinder {
namespace {

constexpr char kFixture[] = "testdata/sframe/threads_c_sframe_v2_nopie";

// zlib's compression of 16 zero bytes: a .debug_frame of zero terminators.
constexpr uint8_t kZlib16Zeros[] = {0x78, 0x9c, 0x63, 0x60, 0x40, 0x05,
                                    0x00, 0x00, 0x10, 0x00, 0x01};

// The fixture with its .note.gnu.build-id section renamed .debug_frame and
// pointed at an Elf64_Chdr claiming `claimed` bytes + kZlib16Zeros,
// appended to the file (the build-id stays reachable through PT_NOTE).
std::vector<uint8_t> WithCompressedDebugFrame(uint64_t claimed) {
  std::ifstream f(kFixture, std::ios::binary);
  std::vector<uint8_t> b((std::istreambuf_iterator<char>(f)),
                         std::istreambuf_iterator<char>());
  Elf64_Ehdr eh;
  std::memcpy(&eh, b.data(), sizeof(eh));
  Elf64_Shdr strtab;
  std::memcpy(&strtab, b.data() + eh.e_shoff + eh.e_shstrndx * sizeof(strtab),
              sizeof(strtab));
  for (size_t i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr s;
    uint8_t* at = b.data() + eh.e_shoff + i * sizeof(s);
    std::memcpy(&s, at, sizeof(s));
    char* name = reinterpret_cast<char*>(b.data() + strtab.sh_offset + s.sh_name);
    if (std::strcmp(name, ".note.gnu.build-id") != 0) continue;
    std::strcpy(name, ".debug_frame");
    Elf64_Chdr ch{};
    ch.ch_type = ELFCOMPRESS_ZLIB;
    ch.ch_size = claimed;
    ch.ch_addralign = 8;
    s.sh_type = SHT_PROGBITS;
    s.sh_flags = SHF_COMPRESSED;
    s.sh_addr = 0;
    s.sh_offset = b.size();
    s.sh_size = sizeof(ch) + sizeof(kZlib16Zeros);
    s.sh_addralign = 8;
    std::memcpy(at, &s, sizeof(s));
    const uint8_t* c = reinterpret_cast<const uint8_t*>(&ch);
    b.insert(b.end(), c, c + sizeof(ch));
    b.insert(b.end(), std::begin(kZlib16Zeros), std::end(kZlib16Zeros));
    return b;
  }
  ADD_FAILURE() << "no .note.gnu.build-id in " << kFixture;
  return b;
}

TEST(ModuleBoundsTest, CompressedSectionOfTheRightSizeIsUsed) {
  absl::StatusOr<std::shared_ptr<Module>> m =
      Module::FromImage(WithCompressedDebugFrame(16), "control");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_TRUE((*m)->has_debug_frame());
}

TEST(ModuleBoundsTest, CompressedSectionClaimingGibibytesIsIgnored) {
  for (uint64_t claimed : {uint64_t{4} << 30, uint64_t{1} << 40,
                           ~uint64_t{0}}) {
    absl::StatusOr<std::shared_ptr<Module>> m =
        Module::FromImage(WithCompressedDebugFrame(claimed), "bomb");
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_FALSE((*m)->has_debug_frame()) << claimed;
    // The module's other tables still answer.
    EXPECT_TRUE((*m)->has_eh_frame());
  }
}

}  // namespace
}  // namespace unwindd::unwinder
