// core_elf against this very test binary, as a file and as loaded in our
// own address space: both views must agree on the build-id, the bias from
// AT_PHDR must be the dynamic linker's, and the image rebuilt from memory
// must carry the same build-id.
#include "proc/core_elf.h"

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include <memory>

#include "gtest/gtest.h"
#include "memory/factories.h"
#include "memory/file_region_memory.h"
#include "memory/testing/map_memory.h"

namespace unwindd::proc {
namespace {

uint64_t MainProgramBias() {
  uint64_t bias = 0;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        *static_cast<uint64_t*>(out) = info->dlpi_addr;
        return 1;  // the first object is the main program
      },
      &bias);
  return bias;
}

std::unique_ptr<memory::Memory> SelfFile() {
  auto fd = std::make_shared<memory::ScopedFd>(
      memory::OpenCloexec("/proc/self/exe", O_RDONLY));
  struct stat st;
  EXPECT_EQ(fstat(fd->get(), &st), 0);
  return *memory::CreateFileRegionMemory({{0, uint64_t(st.st_size), fd, 0}});
}

TEST(CoreElfTest, FileAndLoadedViewsAgree) {
  std::unique_ptr<memory::Memory> file = SelfFile();
  absl::StatusOr<ElfImage> f = ReadElfImage(*file, 0, ElfView::kFile);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->elf_class, ELFCLASS64);
  EXPECT_FALSE(f->phdrs.empty());
  absl::StatusOr<std::string> file_id = ReadBuildId(*file, *f, ElfView::kFile);
  ASSERT_TRUE(file_id.ok()) << file_id.status();

  std::unique_ptr<memory::Memory> self = memory::CreateProcessMemory(getpid());
  absl::StatusOr<ElfImage> exe = ElfImageFromPhdrs(
      *self, getauxval(AT_PHDR), getauxval(AT_PHNUM), ELFCLASS64);
  ASSERT_TRUE(exe.ok()) << exe.status();
  EXPECT_EQ(exe->load_bias, MainProgramBias());
  absl::StatusOr<std::string> mem_id =
      ReadBuildId(*self, *exe, ElfView::kLoaded);
  ASSERT_TRUE(mem_id.ok()) << mem_id.status();
  EXPECT_EQ(*mem_id, *file_id);

  absl::StatusOr<ElfImage> at_base =
      ReadElfImage(*self, exe->base, ElfView::kLoaded);
  ASSERT_TRUE(at_base.ok());
  EXPECT_EQ(at_base->load_bias, exe->load_bias);
  auto [lo, hi] = LoadedExtent(*at_base);
  EXPECT_LE(lo, exe->base);
  EXPECT_GT(hi, reinterpret_cast<uint64_t>(&MainProgramBias));
}

TEST(CoreElfTest, RebuiltImageHasTheBuildIdAndNoSections) {
  std::unique_ptr<memory::Memory> self = memory::CreateProcessMemory(getpid());
  absl::StatusOr<ElfImage> exe = ElfImageFromPhdrs(
      *self, getauxval(AT_PHDR), getauxval(AT_PHNUM), ELFCLASS64);
  ASSERT_TRUE(exe.ok());
  absl::StatusOr<std::vector<uint8_t>> img =
      RebuildImageFromMemory(*self, exe->base, uint64_t{1} << 30);
  ASSERT_TRUE(img.ok()) << img.status();
  auto mem = memory::CreateBufferMemory(0, *img);
  absl::StatusOr<ElfImage> parsed = ReadElfImage(*mem, 0, ElfView::kFile);
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->shoff, 0u);
  EXPECT_EQ(parsed->shnum, 0u);
  std::unique_ptr<memory::Memory> file = SelfFile();
  absl::StatusOr<ElfImage> f = ReadElfImage(*file, 0, ElfView::kFile);
  EXPECT_EQ(*ReadBuildId(*mem, *parsed, ElfView::kFile),
            *ReadBuildId(*file, *f, ElfView::kFile));
  EXPECT_TRUE(
      absl::IsDataLoss(RebuildImageFromMemory(*self, exe->base, 100).status()));
}

// An ELF header in a core can claim segments of hundreds of MiB that the
// core does not hold: nothing that size is allocated (the fuzzer found a
// 4 KiB core that made the rebuild zero-fill 512 MiB), missing data is
// left out and missing code is an error.
TEST(CoreElfTest, RebuildAllocatesOnlyWhatTheMemoryHolds) {
  memory::testing::MapMemory m;
  const uint64_t base = 0x10000;
  std::vector<uint8_t> h(64, 0);
  h[0] = 0x7f, h[1] = 'E', h[2] = 'L', h[3] = 'F';
  h[4] = ELFCLASS64, h[5] = ELFDATA2LSB, h[6] = EV_CURRENT;
  h[16] = ET_DYN, h[18] = EM_X86_64, h[20] = EV_CURRENT;
  h[32] = 64;    // e_phoff
  h[52] = 64;    // e_ehsize
  h[54] = 56;    // e_phentsize
  h[56] = 2;     // e_phnum
  m.Put(base, h);
  // phdr(index, flags, offset, vaddr, filesz)
  auto phdr = [&](int i, uint32_t flags, uint64_t offset, uint64_t vaddr, uint64_t filesz) {
    const uint64_t at = base + 64 + 56 * i;
    m.PutLe(at, PT_LOAD, 4);
    m.PutLe(at + 4, flags, 4);
    m.PutLe(at + 8, offset, 8);
    m.PutLe(at + 16, vaddr, 8);
    m.PutLe(at + 24, 0, 8);  // p_paddr
    m.PutLe(at + 32, filesz, 8);
    m.PutLe(at + 40, filesz, 8);
    m.PutLe(at + 48, 0x1000, 8);
  };
  phdr(0, PF_R | PF_X, 0, 0, 0x200);
  // Data claimed at file offset 0x1000, 400 MiB, of which the memory has
  // only the first page.
  phdr(1, PF_R | PF_W, 0x1000, 0x1000, uint64_t{400} << 20);
  for (uint64_t a = base + 64 + 2 * 56; a < base + 0x200; ++a) m.PutLe(a, 0xcc, 1);
  for (uint64_t a = base + 0x1000; a < base + 0x2000; ++a) m.PutLe(a, 0xdd, 1);
  absl::StatusOr<std::vector<uint8_t>> img =
      RebuildImageFromMemory(m, base, uint64_t{512} << 20);
  ASSERT_TRUE(img.ok()) << img.status();
  EXPECT_EQ(img->size(), 0x200u);  // the code; not 400 MiB of data
  EXPECT_EQ((*img)[0x1ff], 0xcc);

  // The same size claimed by code: an error, before any allocation.
  phdr(1, PF_R | PF_X, 0x1000, 0x1000, uint64_t{400} << 20);
  absl::StatusOr<std::vector<uint8_t>> code =
      RebuildImageFromMemory(m, base, uint64_t{512} << 20);
  ASSERT_FALSE(code.ok());
  EXPECT_TRUE(absl::IsDataLoss(code.status())) << code.status();
  EXPECT_NE(code.status().message().find("not in the target's memory"),
            std::string::npos)
      << code.status();
}

TEST(CoreElfTest, MalformedHeaders) {
  memory::testing::MapMemory m;
  EXPECT_TRUE(
      absl::IsOutOfRange(ReadElfImage(m, 0x1000, ElfView::kLoaded).status()));
  m.Put(0x1000, {0x7f, 'E', 'L', 'F', 2, 1, 1});
  // Cut short after e_ident.
  EXPECT_TRUE(
      absl::IsOutOfRange(ReadElfImage(m, 0x1000, ElfView::kLoaded).status()));
  std::vector<uint8_t> h(64, 0);
  h[0] = 0x7f, h[1] = 'E', h[2] = 'L', h[3] = 'F', h[4] = 2, h[5] = 2;
  m.Put(0x2000, h);
  EXPECT_TRUE(absl::IsUnimplemented(
      ReadElfImage(m, 0x2000, ElfView::kLoaded).status()));
  h[5] = 1;
  h[54] = 56;    // e_phentsize
  h[56] = 0xff;  // e_phnum 0xffff (PN_XNUM) without a section header
  h[57] = 0xff;
  h[40] = 0x80;  // e_shoff: section header 0 at 0x3080, unreadable
  m.Put(0x3000, h);
  EXPECT_FALSE(ReadElfImage(m, 0x3000, ElfView::kLoaded, 1 << 20).ok());
  h[56] = 3, h[57] = 0;
  h[32] = 0xf0;  // e_phoff 0xff..f0 wraps past 2^64 from 0x4000
  for (int i = 33; i < 40; ++i) h[i] = 0xff;
  m.Put(0x4000, h);
  EXPECT_TRUE(
      absl::IsDataLoss(ReadElfImage(m, 0x4000, ElfView::kLoaded).status()));
  EXPECT_TRUE(absl::IsDataLoss(ReadCString(m, 0x2000, 3).status()));
}

}  // namespace
}  // namespace unwindd::proc
