// Real toolchain output: the .eh_frame and .eh_frame_hdr of this test binary
// (read by hand from /proc/self/exe with <elf.h>), checked for agreement
// between the built index (CfiSection::FindFde) and the linker's table
// (EhFrameHdr::Lookup).
#include <elf.h>
#include <link.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "arch/arch.h"
#include "gtest/gtest.h"
#include "unwinder/cfi/cfi_section.h"
#include "unwinder/cfi/eh_frame_hdr.h"
#include "unwinder/cfi/encoding.h"

// A function of this binary whose FDE the test looks up.
extern "C" __attribute__((noinline)) int UnwinddCfiSelfExeProbe(int x) {
  asm volatile("" ::: "memory");
  return x * 3 + 1;
}

namespace unwindd::unwinder {
namespace {

struct Section {
  uint64_t addr = 0;
  absl::Span<const uint8_t> bytes;
};

class SelfExe {
 public:
  bool Load() {
    std::ifstream in("/proc/self/exe", std::ios::binary);
    file_.assign(std::istreambuf_iterator<char>(in),
                 std::istreambuf_iterator<char>());
    if (file_.size() < sizeof(Elf64_Ehdr)) return false;
    std::memcpy(&ehdr_, file_.data(), sizeof(ehdr_));
    if (std::memcmp(ehdr_.e_ident, ELFMAG, SELFMAG) != 0 ||
        ehdr_.e_ident[EI_CLASS] != ELFCLASS64 ||
        ehdr_.e_shentsize != sizeof(Elf64_Shdr)) {
      return false;
    }
    for (size_t i = 0; i < ehdr_.e_shnum; ++i) {
      const uint64_t at = ehdr_.e_shoff + i * sizeof(Elf64_Shdr);
      if (at + sizeof(Elf64_Shdr) > file_.size()) return false;
      Elf64_Shdr sh;
      std::memcpy(&sh, file_.data() + at, sizeof(sh));
      shdrs_.push_back(sh);
    }
    return ehdr_.e_shstrndx < shdrs_.size();
  }

  std::optional<Section> Find(absl::string_view name) const {
    const Elf64_Shdr& strtab = shdrs_[ehdr_.e_shstrndx];
    for (const Elf64_Shdr& sh : shdrs_) {
      const uint64_t name_at = strtab.sh_offset + sh.sh_name;
      if (name_at >= file_.size()) continue;
      const char* s = reinterpret_cast<const char*>(file_.data() + name_at);
      if (absl::string_view(s, strnlen(s, file_.size() - name_at)) != name) {
        continue;
      }
      if (sh.sh_type == SHT_NOBITS ||
          sh.sh_offset + sh.sh_size > file_.size()) {
        return std::nullopt;
      }
      return Section{sh.sh_addr, absl::Span<const uint8_t>(
                                     file_.data() + sh.sh_offset, sh.sh_size)};
    }
    return std::nullopt;
  }

  uint16_t machine() const { return ehdr_.e_machine; }

 private:
  std::vector<uint8_t> file_;
  Elf64_Ehdr ehdr_{};
  std::vector<Elf64_Shdr> shdrs_;
};

// Load bias of the main program: the first object dl_iterate_phdr reports.
uint64_t MainProgramBias() {
  uint64_t bias = 0;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        *static_cast<uint64_t*>(out) = info->dlpi_addr;
        return 1;  // stop after the first
      },
      &bias);
  return bias;
}

class CfiSelfExeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(exe_.Load()) << "cannot read /proc/self/exe as ELF64";
    if (exe_.machine() == EM_X86_64) {
      arch_ = arch::Arch::kX86_64;
    } else if (exe_.machine() == EM_AARCH64) {
      arch_ = arch::Arch::kAArch64;
    } else {
      GTEST_SKIP() << "unexpected e_machine " << exe_.machine();
    }
    std::optional<Section> eh = exe_.Find(".eh_frame");
    std::optional<Section> hdr = exe_.Find(".eh_frame_hdr");
    ASSERT_TRUE(eh.has_value() && hdr.has_value());
    eh_frame_ = *eh;
    EncodingBases bases;
    if (std::optional<Section> got = exe_.Find(".got")) bases.data = got->addr;
    section_.emplace(CfiKind::kEhFrame, eh_frame_.bytes, eh_frame_.addr, arch_,
                     bases);
    absl::StatusOr<EhFrameHdr> parsed =
        EhFrameHdr::Parse(hdr->bytes, hdr->addr, 8);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    hdr_.emplace(*parsed);
    ASSERT_TRUE(hdr_->HasTable());
  }

  SelfExe exe_;
  arch::Arch arch_ = arch::Arch::kX86_64;
  Section eh_frame_;
  std::optional<CfiSection> section_;
  std::optional<EhFrameHdr> hdr_;
};

TEST_F(CfiSelfExeTest, HdrPointsAtEhFrame) {
  EXPECT_EQ(hdr_->eh_frame_vaddr(), eh_frame_.addr);
}

TEST_F(CfiSelfExeTest, EveryFdeAgreesWithTheHdrTable) {
  // Walk the section independently of the code under test: 32-bit lengths,
  // CIE id 0, zero terminator (what gcc and ld produce).
  absl::Span<const uint8_t> d = eh_frame_.bytes;
  auto u32 = [&](uint64_t at) {
    uint32_t v;
    std::memcpy(&v, d.data() + at, 4);
    return v;
  };
  size_t fdes = 0;
  uint64_t offset = 0;
  while (offset + 8 <= d.size()) {
    const uint32_t length = u32(offset);
    if (length == 0) break;
    ASSERT_NE(length, 0xffffffffu)
        << "64-bit .eh_frame at 0x" << std::hex << offset;
    const bool is_cie = u32(offset + 4) == 0;
    if (!is_cie) {
      absl::StatusOr<Fde> fde = section_->ParseFdeAt(offset);
      ASSERT_TRUE(fde.ok()) << fde.status();
      if (fde->pc_begin != fde->pc_end) {
        ++fdes;
        absl::StatusOr<Fde> found = section_->FindFde(fde->pc_begin);
        ASSERT_TRUE(found.ok()) << found.status();
        EXPECT_EQ(found->offset, offset);
        absl::StatusOr<uint64_t> via_hdr = hdr_->Lookup(fde->pc_begin);
        ASSERT_TRUE(via_hdr.ok()) << via_hdr.status();
        EXPECT_EQ(*via_hdr, eh_frame_.addr + offset)
            << "pc 0x" << std::hex << fde->pc_begin;
        // The last byte of the range maps to the same FDE both ways.
        absl::StatusOr<uint64_t> last = hdr_->Lookup(fde->pc_end - 1);
        ASSERT_TRUE(last.ok()) << last.status();
        EXPECT_EQ(*last, eh_frame_.addr + offset);
      }
    }
    offset += 4 + static_cast<uint64_t>(length);
  }
  EXPECT_GT(fdes, 0u);
  EXPECT_EQ(section_->IndexedFdeCount(), fdes);
  EXPECT_EQ(hdr_->fde_count(), fdes);
}

TEST_F(CfiSelfExeTest, ProbeFunctionIsFoundBothWays) {
  EXPECT_EQ(UnwinddCfiSelfExeProbe(1), 4);
  const uint64_t runtime_pc =
      reinterpret_cast<uintptr_t>(&UnwinddCfiSelfExeProbe);
  // rel_pc in DESIGN.md terms: the function's address in the file.
  const uint64_t file_pc = runtime_pc - MainProgramBias();

  absl::StatusOr<Fde> fde = section_->FindFde(file_pc);
  ASSERT_TRUE(fde.ok()) << fde.status();
  EXPECT_LE(fde->pc_begin, file_pc);
  EXPECT_LT(file_pc, fde->pc_end);
  EXPECT_FALSE(fde->instructions.empty() &&
               fde->cie.initial_instructions.empty());

  absl::StatusOr<uint64_t> via_hdr = hdr_->Lookup(file_pc);
  ASSERT_TRUE(via_hdr.ok()) << via_hdr.status();
  EXPECT_EQ(*via_hdr, eh_frame_.addr + fde->offset);
  // The FDE the hdr names parses to the same range.
  absl::StatusOr<Fde> from_hdr =
      section_->ParseFdeAt(*via_hdr - eh_frame_.addr);
  ASSERT_TRUE(from_hdr.ok()) << from_hdr.status();
  EXPECT_EQ(from_hdr->pc_begin, fde->pc_begin);
  EXPECT_EQ(from_hdr->pc_end, fde->pc_end);
}

}  // namespace
}  // namespace unwindd::unwinder
