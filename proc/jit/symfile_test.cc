#include "proc/jit/symfile.h"

#include <elf.h>

#include <algorithm>
#include <cstring>
#include <tuple>

#include "gtest/gtest.h"
#include "memory/testing/map_memory.h"
#include "proc/jit/testing/symfile_writer.h"

namespace unwindd::proc::jit {
namespace {

using memory::testing::MapMemory;
using testing::EhFrame;
using testing::EhFramePcBeginOffset;
using testing::SymfileWriter;

constexpr uint64_t kText = 0x7f0000002000;
constexpr uint64_t kEh = 0x7f0000000008;

std::vector<uint8_t> Code(size_t n) {
  std::vector<uint8_t> c(n);
  for (size_t i = 0; i < n; ++i) c[i] = 0x90 + (i % 7);
  return c;
}

// The section named `name` of an image SymfileRegions built: (sh_addr,
// bytes).
std::pair<uint64_t, std::vector<uint8_t>> ImageSection(const std::vector<uint8_t>& img,
                                                       const char* name) {
  Elf64_Ehdr eh;
  std::memcpy(&eh, img.data(), sizeof(eh));
  Elf64_Shdr strs;
  std::memcpy(&strs, img.data() + eh.e_shoff + eh.e_shstrndx * sizeof(Elf64_Shdr), sizeof(strs));
  for (int i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr s;
    std::memcpy(&s, img.data() + eh.e_shoff + i * sizeof(Elf64_Shdr), sizeof(s));
    if (std::strcmp(reinterpret_cast<const char*>(img.data() + strs.sh_offset + s.sh_name),
                    name) == 0) {
      return {s.sh_addr, std::vector<uint8_t>(img.begin() + s.sh_offset,
                                              img.begin() + s.sh_offset + s.sh_size)};
    }
  }
  return {0, {}};
}

int64_t S32(const std::vector<uint8_t>& b, uint64_t at) {
  int32_t v;
  std::memcpy(&v, b.data() + at, 4);
  return v;
}

// lli-14's shape: .text with three functions, .eh_frame in another block,
// its FDEs' pc_begin relocated by R_X86_64_PC32/PC64 against .text.
std::vector<uint8_t> LliLike(bool pcrel8, bool undefined_target = false) {
  SymfileWriter w;
  const size_t text = w.Section(".text", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, kText, Code(0xa0));
  w.Section(".bss", SHT_NOBITS, SHF_ALLOC | SHF_WRITE, 0x7f0000001000, {}, 4);
  const size_t eh = w.Section(".eh_frame", SHT_X86_64_UNWIND, SHF_ALLOC, kEh,
                              EhFrame({{0, 0x2f}, {0, 0x32}, {0, 0x30}}, pcrel8));
  const size_t tsym = w.Symbol("", 0, 0, STT_SECTION, text, STB_LOCAL);
  w.Symbol("leaf", 0, 0x2f, STT_FUNC, text);
  w.Symbol("rec", 0x30, 0x32, STT_FUNC, text);
  w.Symbol("main", 0x70, 0x30, STT_FUNC, text);
  const size_t undef = w.Symbol("printf", 0, 0, STT_NOTYPE, SHN_UNDEF);
  const uint32_t type = pcrel8 ? R_X86_64_PC64 : R_X86_64_PC32;
  w.Rela(eh, EhFramePcBeginOffset(0, pcrel8), type, tsym, 0);
  w.Rela(eh, EhFramePcBeginOffset(1, pcrel8), type, tsym, 0x30);
  w.Rela(eh, EhFramePcBeginOffset(2, pcrel8), type, undefined_target ? undef : tsym, 0x70);
  return w.Build();
}

// The FDEs' pc_begin fields of the image's .eh_frame, resolved: where
// each says its function starts (target addresses).
std::vector<uint64_t> FdeStarts(const std::vector<uint8_t>& image, bool pcrel8) {
  const auto [addr, bytes] = ImageSection(image, ".eh_frame");
  std::vector<uint64_t> out;
  for (size_t i = 0; i < 3; ++i) {
    const uint64_t at = EhFramePcBeginOffset(i, pcrel8);
    int64_t v = 0;
    if (pcrel8) {
      std::memcpy(&v, bytes.data() + at, 8);
    } else {
      v = S32(bytes, at);
    }
    out.push_back(addr + at + v);
  }
  return out;
}

TEST(SymfileTest, RelocatesEhFrameAndNamesFunctions) {
  for (bool pcrel8 : {false, true}) {
    MapMemory mem;  // nothing readable: the file's bytes, relocated
    const std::vector<uint8_t> obj = LliLike(pcrel8);
    absl::StatusOr<SymfileCode> c = SymfileRegions(obj, 0x3df83d10, mem);
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(c->eh_frame, EhFrameSource::kRelocated);
    EXPECT_EQ(c->eh_frame_problem, "");
    // leaf, padding, rec, padding, main.
    const std::vector<std::tuple<uint64_t, uint64_t, std::string>> want = {
        {kText, kText + 0x2f, "leaf"},        {kText + 0x2f, kText + 0x30, ""},
        {kText + 0x30, kText + 0x62, "rec"},  {kText + 0x62, kText + 0x70, ""},
        {kText + 0x70, kText + 0xa0, "main"}};
    ASSERT_EQ(c->regions.size(), want.size());
    const std::vector<uint8_t>& image = *c->regions[0].code->elf;
    for (size_t i = 0; i < want.size(); ++i) {
      const JitRegion& r = c->regions[i];
      EXPECT_EQ(r.mapping.start, std::get<0>(want[i])) << i;
      EXPECT_EQ(r.mapping.end, std::get<1>(want[i])) << i;
      EXPECT_EQ(r.code->name, std::get<2>(want[i])) << i;
      EXPECT_EQ(r.mapping.path, "jit-symfile-0x3df83d10");
      EXPECT_TRUE(r.mapping.exec);
      EXPECT_EQ(r.code->elf.get(), &image) << "one image for the symfile";
      // The mapping's file offset is where its first code byte is in the
      // image: the load bias is 0.
      EXPECT_EQ(image[r.mapping.offset], 0x90 + ((r.mapping.start - kText) % 7)) << i;
    }
    const auto [eh_addr, eh] = ImageSection(image, ".eh_frame");
    EXPECT_EQ(eh_addr, kEh);
    EXPECT_EQ(FdeStarts(image, pcrel8),
              (std::vector<uint64_t>{kText, kText + 0x30, kText + 0x70}));
    const auto [text_addr, text] = ImageSection(image, ".text");
    EXPECT_EQ(text_addr, kText);
    EXPECT_EQ(text, Code(0xa0)) << "the file's code when the target's is unreadable";
  }
}

// A relocation the object alone cannot apply (an undefined symbol): the
// JIT linker's copy at the section's load address, when it is this
// section relocated.
TEST(SymfileTest, LiveEhFrameWhenRelocationsCannotBeApplied) {
  const std::vector<uint8_t> obj = LliLike(false, /*undefined_target=*/true);
  std::vector<uint8_t> live = EhFrame({{0, 0x2f}, {0, 0x32}, {0, 0x30}});
  const int64_t starts[] = {0, 0x30, 0x70};
  for (size_t i = 0; i < 3; ++i) {
    const uint64_t at = EhFramePcBeginOffset(i);
    const int32_t v = static_cast<int32_t>(kText + starts[i] - (kEh + at));
    std::memcpy(live.data() + at, &v, 4);
  }
  {
    MapMemory mem;
    mem.Put(kEh, live);
    mem.Put(kText, std::vector<uint8_t>(0xa0, 0xcc));
    absl::StatusOr<SymfileCode> c = SymfileRegions(obj, 0x1000, mem);
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(c->eh_frame, EhFrameSource::kLive);
    const std::vector<uint8_t>& image = *c->regions[0].code->elf;
    EXPECT_EQ(FdeStarts(image, false),
              (std::vector<uint64_t>{kText, kText + 0x30, kText + 0x70}));
    EXPECT_EQ(ImageSection(image, ".text").second, std::vector<uint8_t>(0xa0, 0xcc))
        << "the code as the target has it";
  }
  {
    // Other bytes there (not this section): no CFI, and it says why.
    live[30] ^= 0xff;
    MapMemory mem;
    mem.Put(kEh, live);
    absl::StatusOr<SymfileCode> c = SymfileRegions(obj, 0x1000, mem);
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(c->eh_frame, EhFrameSource::kNone);
    EXPECT_NE(c->eh_frame_problem.find("undefined symbol"), std::string::npos)
        << c->eh_frame_problem;
    EXPECT_TRUE(ImageSection(*c->regions[0].code->elf, ".eh_frame").second.empty());
  }
}

// i386: ELF32, .rel.eh_frame (the addend in the field), R_386_PC32.
TEST(SymfileTest, I386RelRelocations) {
  SymfileWriter w(/*is64=*/false, EM_386);
  w.UseRel();
  const uint64_t text_addr = 0xf7002000, eh_addr = 0xf7000010;
  const size_t text = w.Section(".text", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, text_addr,
                                Code(0x40));
  const size_t eh = w.Section(".eh_frame", SHT_PROGBITS, SHF_ALLOC, eh_addr,
                              EhFrame({{0, 0x20}, {0, 0x20}}));
  const size_t tsym = w.Symbol("", 0, 0, STT_SECTION, text, STB_LOCAL);
  w.Symbol("f", 0x20, 0x20, STT_FUNC, text);
  w.Rela(eh, EhFramePcBeginOffset(0), R_386_PC32, tsym, 0);
  w.Rela(eh, EhFramePcBeginOffset(1), R_386_PC32, tsym, 0x20);
  MapMemory mem;
  absl::StatusOr<SymfileCode> c = SymfileRegions(w.Build(), 0x9000, mem);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->eh_frame, EhFrameSource::kRelocated);
  ASSERT_EQ(c->regions.size(), 2u);
  EXPECT_EQ(c->regions[1].code->name, "f");
  const std::vector<uint8_t>& img = *c->regions[0].code->elf;
  ASSERT_EQ(img[EI_CLASS], ELFCLASS32);
  Elf32_Ehdr ehdr;
  std::memcpy(&ehdr, img.data(), sizeof(ehdr));
  EXPECT_EQ(ehdr.e_machine, EM_386);
  EXPECT_EQ(ehdr.e_phnum, 1);
  // The .eh_frame section (the second of the image's sections).
  Elf32_Shdr sh;
  std::memcpy(&sh, img.data() + ehdr.e_shoff + 2 * sizeof(Elf32_Shdr), sizeof(sh));
  EXPECT_EQ(sh.sh_addr, eh_addr);
  const std::vector<uint8_t> ehb(img.begin() + sh.sh_offset, img.begin() + sh.sh_offset + sh.sh_size);
  for (int i = 0; i < 2; ++i) {
    const uint64_t at = EhFramePcBeginOffset(i);
    EXPECT_EQ(eh_addr + at + S32(ehb, at), text_addr + 0x20 * i);
  }
}

// An object that is not relocatable (ET_DYN, as some runtimes write):
// its .eh_frame is used as it is.
TEST(SymfileTest, NonRelocatableObjectsAsTheyAre) {
  SymfileWriter w(true, EM_X86_64, ET_DYN);
  w.Section(".text", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, kText, Code(0x20));
  const std::vector<uint8_t> eh = EhFrame({{0x1234, 0x20}});
  w.Section(".eh_frame", SHT_PROGBITS, SHF_ALLOC, kEh, eh);
  w.Symbol("g", kText, 0x20, STT_FUNC, 1);
  MapMemory mem;
  absl::StatusOr<SymfileCode> c = SymfileRegions(w.Build(), 0x9000, mem);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->eh_frame, EhFrameSource::kFile);
  ASSERT_EQ(c->regions.size(), 1u);
  EXPECT_EQ(c->regions[0].code->name, "g");
  EXPECT_EQ(ImageSection(*c->regions[0].code->elf, ".eh_frame").second, eh);
}

TEST(SymfileTest, RejectsWhatItCannotUse) {
  MapMemory mem;
  EXPECT_TRUE(absl::IsDataLoss(SymfileRegions({}, 1, mem).status()));
  const std::vector<uint8_t> junk(100, 0x41);
  EXPECT_TRUE(absl::IsDataLoss(SymfileRegions(junk, 1, mem).status()));
  // No load addresses (an object nobody placed).
  SymfileWriter unplaced;
  unplaced.Section(".text", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, 0, Code(16));
  EXPECT_TRUE(absl::IsNotFound(SymfileRegions(unplaced.Build(), 1, mem).status()));
  // A machine the unwinder does not know.
  SymfileWriter ppc(true, EM_PPC64);
  ppc.Section(".text", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, kText, Code(16));
  EXPECT_TRUE(absl::IsUnimplemented(SymfileRegions(ppc.Build(), 1, mem).status()));
  // Big-endian.
  std::vector<uint8_t> be = LliLike(false);
  be[EI_DATA] = ELFDATA2MSB;
  EXPECT_TRUE(absl::IsUnimplemented(SymfileRegions(be, 1, mem).status()));
}

// Every prefix of a good object, and every byte of it flipped: an error
// or a result, never a crash or a read out of bounds (run under ASan by
// --config=asan), and nothing larger than the bounds.
TEST(SymfileTest, TruncatedAndCorruptedObjects) {
  const std::vector<uint8_t> obj = LliLike(false);
  MapMemory mem;
  for (size_t n = 0; n < obj.size(); ++n) {
    const std::vector<uint8_t> cut(obj.begin(), obj.begin() + n);
    absl::StatusOr<SymfileCode> c = SymfileRegions(cut, 1, mem);
    if (c.ok()) {
      EXPECT_FALSE(c->regions.empty()) << n;
    }
  }
  for (size_t i = 0; i < obj.size(); ++i) {
    for (uint8_t x : {0x01, 0x80, 0xff}) {
      std::vector<uint8_t> bad = obj;
      bad[i] ^= x;
      absl::StatusOr<SymfileCode> c = SymfileRegions(bad, 1, mem);
      if (!c.ok()) continue;
      ASSERT_FALSE(c->regions.empty());
      EXPECT_LE(c->regions[0].code->elf->size(), kMaxSymfileCodeBytes + (1 << 20)) << i;
    }
  }
}

// Hostile section tables: huge sizes and counts, overlapping code, a
// relocation outside its section.
TEST(SymfileTest, HostileSections) {
  MapMemory mem;
  {
    SymfileWriter w;
    // Claims 1 TiB of code at an address: over the bound, not allocated.
    w.Section(".text", SHT_NOBITS, SHF_ALLOC | SHF_EXECINSTR, kText, {}, uint64_t{1} << 40);
    EXPECT_TRUE(absl::IsNotFound(SymfileRegions(w.Build(), 1, mem).status()));
  }
  {
    SymfileWriter w;
    // Wraps around the address space.
    w.Section(".text", SHT_NOBITS, SHF_ALLOC | SHF_EXECINSTR, ~uint64_t{0} - 8, {}, 64);
    EXPECT_TRUE(absl::IsNotFound(SymfileRegions(w.Build(), 1, mem).status()));
  }
  {
    SymfileWriter w;
    w.Section(".text", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, kText, Code(0x40));
    w.Section(".text.b", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, kText + 0x20, Code(0x40));
    absl::StatusOr<SymfileCode> c = SymfileRegions(w.Build(), 1, mem);
    ASSERT_TRUE(c.ok()) << c.status();
    ASSERT_EQ(c->regions.size(), 1u) << "the overlapping section is dropped";
    EXPECT_EQ(c->regions[0].mapping.end, kText + 0x40);
  }
  {
    SymfileWriter w;
    const size_t text =
        w.Section(".text", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, kText, Code(0x20));
    const size_t eh = w.Section(".eh_frame", SHT_PROGBITS, SHF_ALLOC, kEh, EhFrame({{0, 0x20}}));
    const size_t tsym = w.Symbol("", 0, 0, STT_SECTION, text, STB_LOCAL);
    w.Rela(eh, 1u << 30, R_X86_64_PC32, tsym, 0);
    absl::StatusOr<SymfileCode> c = SymfileRegions(w.Build(), 1, mem);
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(c->eh_frame, EhFrameSource::kNone);
    EXPECT_NE(c->eh_frame_problem.find("outside .eh_frame"), std::string::npos)
        << c->eh_frame_problem;
  }
  {
    // A PC32 relocation whose result does not fit 4 bytes.
    SymfileWriter w;
    const size_t text = w.Section(".text", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR,
                                  0x100000000000, Code(0x20));
    const size_t eh = w.Section(".eh_frame", SHT_PROGBITS, SHF_ALLOC, 0x1000, EhFrame({{0, 0x20}}));
    const size_t tsym = w.Symbol("", 0, 0, STT_SECTION, text, STB_LOCAL);
    w.Rela(eh, EhFramePcBeginOffset(0), R_X86_64_PC32, tsym, 0);
    absl::StatusOr<SymfileCode> c = SymfileRegions(w.Build(), 1, mem);
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_NE(c->eh_frame_problem.find("overflows"), std::string::npos) << c->eh_frame_problem;
  }
}

}  // namespace
}  // namespace unwindd::proc::jit
