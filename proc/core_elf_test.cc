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
