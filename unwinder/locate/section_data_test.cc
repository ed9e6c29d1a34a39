#include "unwinder/locate/section_data.h"

#include <elf.h>
#include <gelf.h>
#include <libelf.h>

#include <cstring>
#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "testdata/debuginfo/servers.h"
#include "unwinder/locate/elf_file.h"
#include "unwinder/locate/testing/fixtures.h"

namespace unwindd::locate {
namespace {

using testing::BasePath;
using testing::kRecursion;
using testing::kSignals;
using testing::kThreads;
using testing::VariantPath;

std::vector<uint8_t> DebugFrameOf(const ElfFile& f, Compression* how) {
  std::vector<uint8_t> storage;
  absl::StatusOr<SectionData> d = ReadSectionData(
      f.elf(), FindDebugSection(f.elf(), ".debug_frame"), kDefaultMaxSectionBytes,
      &storage);
  EXPECT_TRUE(d.ok()) << f.name() << ": " << d.status();
  if (!d.ok()) return {};
  if (how != nullptr) *how = d->compression;
  return std::vector<uint8_t>(d->bytes.begin(), d->bytes.end());
}

// The compressed variants give back exactly the .debug_frame bytes of the
// binary they were made from, for each compression.
TEST(SectionDataTest, EveryCompressionGivesTheOriginalBytes) {
  for (const char* name : {kThreads, kSignals, kRecursion}) {
    absl::StatusOr<ElfFile> base = ElfFile::Open(BasePath(name));
    ASSERT_TRUE(base.ok()) << base.status();
    Compression none;
    std::vector<uint8_t> want = DebugFrameOf(*base, &none);
    EXPECT_EQ(none, Compression::kNone);
    ASSERT_GT(want.size(), 64u);
    for (auto [kind, expected] :
         {std::pair{"zlib", Compression::kZlib}, std::pair{"zstd", Compression::kZstd},
          std::pair{"zlib_gnu", Compression::kZlibGnu}}) {
      absl::StatusOr<ElfFile> f = ElfFile::Open(VariantPath(kind, name));
      ASSERT_TRUE(f.ok()) << f.status();
      // The fixture really is compressed that way (objcopy leaves a
      // section alone when compressing would not make it smaller).
      Elf_Scn* scn = FindDebugSection(f->elf(), ".debug_frame");
      ASSERT_NE(scn, nullptr);
      GElf_Shdr shdr;
      ASSERT_NE(gelf_getshdr(scn, &shdr), nullptr);
      if (expected == Compression::kZlibGnu) {
        EXPECT_EQ(f->FindSection(".debug_frame"), nullptr);
        EXPECT_NE(f->FindSection(".zdebug_frame"), nullptr);
      } else {
        ASSERT_TRUE(shdr.sh_flags & SHF_COMPRESSED) << kind << " " << name;
      }
      Compression how;
      EXPECT_EQ(DebugFrameOf(*f, &how), want) << kind << " " << name;
      EXPECT_EQ(how, expected) << kind;
    }
  }
}

// A copy of a fixture with `patch` applied to the bytes of its
// .debug_frame section (compression header included), opened from memory.
absl::StatusOr<SectionData> ReadPatched(
    const std::string& path, const std::function<void(uint8_t* sec, size_t size)>& patch,
    uint64_t max_bytes, std::shared_ptr<std::vector<uint8_t>>* keep,
    std::vector<uint8_t>* storage, std::unique_ptr<ElfFile>* handle) {
  absl::StatusOr<std::string> bytes = debuginfo_testing::ReadFile(path);
  if (!bytes.ok()) return bytes.status();
  auto image = std::make_shared<std::vector<uint8_t>>(bytes->begin(), bytes->end());
  {
    absl::StatusOr<ElfFile> f = ElfFile::Open(path);
    if (!f.ok()) return f.status();
    Elf_Scn* scn = FindDebugSection(f->elf(), ".debug_frame");
    GElf_Shdr shdr;
    if (scn == nullptr || gelf_getshdr(scn, &shdr) == nullptr) {
      return absl::NotFoundError("no .debug_frame");
    }
    patch(image->data() + shdr.sh_offset, shdr.sh_size);
  }
  *keep = image;
  absl::StatusOr<ElfFile> f = ElfFile::FromImage(image, "patched");
  if (!f.ok()) return f.status();
  *handle = std::make_unique<ElfFile>(*std::move(f));
  return ReadSectionData((*handle)->elf(),
                         FindDebugSection((*handle)->elf(), ".debug_frame"),
                         max_bytes, storage);
}

TEST(SectionDataTest, HostileHeadersAndPayloadsAreErrorsNotAllocations) {
  std::shared_ptr<std::vector<uint8_t>> keep;
  std::vector<uint8_t> storage;
  std::unique_ptr<ElfFile> h;
  auto set_ch_size = [](uint64_t size) {
    return [size](uint8_t* sec, size_t) { std::memcpy(sec + 8, &size, 8); };
  };
  for (const char* kind : {"zlib", "zstd"}) {
    const std::string path = VariantPath(kind, kThreads);
    // Elf64_Chdr: ch_type (4), reserved (4), ch_size (8), ch_addralign (8).
    absl::StatusOr<SectionData> d =
        ReadPatched(path, set_ch_size(uint64_t{1} << 62), kDefaultMaxSectionBytes,
                    &keep, &storage, &h);
    EXPECT_TRUE(absl::IsResourceExhausted(d.status())) << kind << d.status();
    // The real size, but a limit below it.
    d = ReadPatched(path, [](uint8_t*, size_t) {}, 64, &keep, &storage, &h);
    EXPECT_TRUE(absl::IsResourceExhausted(d.status())) << kind << d.status();
    // A size that is a lie by a few bytes: the payload does not fill it.
    d = ReadPatched(
        path,
        [](uint8_t* sec, size_t) {
          uint64_t s;
          std::memcpy(&s, sec + 8, 8);
          s += 16;
          std::memcpy(sec + 8, &s, 8);
        },
        kDefaultMaxSectionBytes, &keep, &storage, &h);
    EXPECT_TRUE(absl::IsDataLoss(d.status())) << kind << d.status();
    // A damaged payload.
    d = ReadPatched(
        path, [](uint8_t* sec, size_t size) { std::memset(sec + 24, 0x55, size - 24); },
        kDefaultMaxSectionBytes, &keep, &storage, &h);
    EXPECT_TRUE(absl::IsDataLoss(d.status())) << kind << d.status();
  }
  // An unknown ch_type.
  absl::StatusOr<SectionData> d = ReadPatched(
      VariantPath("zlib", kThreads),
      [](uint8_t* sec, size_t) {
        uint32_t t = 77;
        std::memcpy(sec, &t, 4);
      },
      kDefaultMaxSectionBytes, &keep, &storage, &h);
  EXPECT_TRUE(absl::IsUnimplemented(d.status())) << d.status();
  // Legacy: a size past the limit, a missing magic.
  d = ReadPatched(
      VariantPath("zlib_gnu", kThreads),
      [](uint8_t* sec, size_t) { std::memset(sec + 4, 0x7f, 8); },
      kDefaultMaxSectionBytes, &keep, &storage, &h);
  EXPECT_TRUE(absl::IsResourceExhausted(d.status())) << d.status();
  d = ReadPatched(
      VariantPath("zlib_gnu", kThreads), [](uint8_t* sec, size_t) { sec[0] = 'X'; },
      kDefaultMaxSectionBytes, &keep, &storage, &h);
  EXPECT_TRUE(absl::IsDataLoss(d.status())) << d.status();
}

TEST(SectionDataTest, NobitsIsEmptyAndAbsentIsNotFound) {
  absl::StatusOr<ElfFile> dbg = ElfFile::Open(VariantPath("split", kThreads) + ".debug");
  ASSERT_TRUE(dbg.ok());
  std::vector<uint8_t> storage;
  absl::StatusOr<SectionData> eh = ReadSectionData(
      dbg->elf(), dbg->FindSection(".eh_frame"), kDefaultMaxSectionBytes, &storage);
  ASSERT_TRUE(eh.ok()) << eh.status();
  EXPECT_TRUE(eh->bytes.empty());
  EXPECT_GT(eh->sh_addr, 0u);
  absl::StatusOr<ElfFile> split = ElfFile::Open(VariantPath("split", kThreads));
  ASSERT_TRUE(split.ok());
  EXPECT_EQ(FindDebugSection(split->elf(), ".debug_frame"), nullptr);
  EXPECT_TRUE(absl::IsNotFound(
      ReadSectionData(split->elf(), nullptr, kDefaultMaxSectionBytes, &storage).status()));
}

}  // namespace
}  // namespace unwindd::locate
