#include "unwinder/locate/elf_file.h"

#include <elf.h>
#include <fcntl.h>
#include <unistd.h>

#include <vector>

#include "gtest/gtest.h"
#include "unwinder/locate/crc32.h"
#include "unwinder/locate/testing/fixtures.h"
#include "unwinder/locate/xz.h"

namespace unwindd::locate {
namespace {

using testing::BasePath;
using testing::kThreads;
using testing::VariantPath;

std::vector<uint8_t> Bytes(const std::string& s) {
  return std::vector<uint8_t>(s.begin(), s.end());
}

TEST(ParseDebugLinkTest, NamePaddingAndCrcInEitherByteOrder) {
  // "ab.debug" is 8 bytes + NUL = 9, padded to 12, then the CRC.
  std::vector<uint8_t> sec = Bytes(std::string("ab.debug\0\0\0\0", 12));
  for (uint8_t b : {0x78, 0x56, 0x34, 0x12}) sec.push_back(b);
  absl::StatusOr<DebugLink> le = ParseDebugLink(sec, false);
  ASSERT_TRUE(le.ok()) << le.status();
  EXPECT_EQ(le->name, "ab.debug");
  EXPECT_EQ(le->crc, 0x12345678u);
  absl::StatusOr<DebugLink> be = ParseDebugLink(sec, true);
  ASSERT_TRUE(be.ok());
  EXPECT_EQ(be->crc, 0x78563412u);
}

TEST(ParseDebugLinkTest, RejectsWhatIsNotAPlainNameWithACrc) {
  EXPECT_FALSE(ParseDebugLink({}, false).ok());
  // No NUL.
  EXPECT_FALSE(ParseDebugLink(Bytes("abcdefgh"), false).ok());
  // Empty name.
  EXPECT_FALSE(ParseDebugLink(Bytes(std::string("\0\0\0\0\1\2\3\4", 8)), false).ok());
  // CRC cut off.
  EXPECT_FALSE(ParseDebugLink(Bytes(std::string("abc\0\1\2", 6)), false).ok());
  // A path would let the file send the lookup anywhere.
  for (const char* bad : {"../etc/x", "/etc/passwd", "a/b", "..", "."}) {
    std::string s = std::string(bad) + std::string(8, '\0');
    absl::StatusOr<DebugLink> l = ParseDebugLink(Bytes(s), false);
    EXPECT_TRUE(absl::IsDataLoss(l.status())) << bad;
  }
  // An overlong name stops at the bound instead of reading on.
  std::string huge(10000, 'a');
  huge += std::string(8, '\0');
  EXPECT_FALSE(ParseDebugLink(Bytes(huge), false).ok());
}

TEST(BuildIdHexTest, Shapes) {
  EXPECT_TRUE(IsBuildIdHex("0123456789abcdef"));
  EXPECT_FALSE(IsBuildIdHex(""));
  EXPECT_FALSE(IsBuildIdHex("abc"));        // odd
  EXPECT_FALSE(IsBuildIdHex("ABCD"));       // uppercase
  EXPECT_FALSE(IsBuildIdHex("ab/../cd"));   // not hex
  EXPECT_FALSE(IsBuildIdHex(std::string(130, 'a')));
  EXPECT_EQ(ToHex(std::vector<uint8_t>{0x00, 0xab, 0x7f}), "00ab7f");
}

TEST(Crc32Test, CheckValue) {
  // The CRC-32 check value (ITU-T V.42 / zlib) of "123456789".
  EXPECT_EQ(Crc32(Bytes("123456789")), 0xcbf43926u);
}

TEST(ElfFileTest, SplitFileAndItsDebugFile) {
  absl::StatusOr<ElfFile> main = ElfFile::Open(VariantPath("split", kThreads));
  ASSERT_TRUE(main.ok()) << main.status();
  absl::StatusOr<ElfFacts> m = main->Facts();
  ASSERT_TRUE(m.ok()) << m.status();
  absl::StatusOr<ElfFile> dbg =
      ElfFile::Open(VariantPath("split", kThreads) + ".debug");
  ASSERT_TRUE(dbg.ok()) << dbg.status();
  absl::StatusOr<ElfFacts> d = dbg->Facts();
  ASSERT_TRUE(d.ok()) << d.status();
  absl::StatusOr<ElfFile> base = ElfFile::Open(BasePath(kThreads));
  ASSERT_TRUE(base.ok());

  // Stripping keeps the build-id; the debug file has it too.
  EXPECT_EQ(m->build_id.size(), 40u);
  EXPECT_EQ(m->build_id, d->build_id);
  EXPECT_EQ(m->build_id, base->Facts()->build_id);
  EXPECT_EQ(m->machine, EM_X86_64);
  EXPECT_EQ(m->elf_class, ELFCLASS64);

  // The stripped file: a link, no .debug_frame, no .symtab; crt's .eh_frame.
  ASSERT_TRUE(m->debuglink.has_value());
  EXPECT_EQ(m->debuglink->name, std::string(kThreads) + ".debug");
  EXPECT_FALSE(m->has_debug_frame);
  EXPECT_FALSE(m->has_symtab);
  EXPECT_TRUE(m->has_eh_frame);
  EXPECT_FALSE(m->has_gnu_debugdata);

  // The link's CRC is the debug file's.
  absl::StatusOr<uint32_t> crc = FileCrc32(dbg->fd(), uint64_t{1} << 30);
  ASSERT_TRUE(crc.ok());
  EXPECT_EQ(*crc, m->debuglink->crc);
  EXPECT_TRUE(absl::IsResourceExhausted(FileCrc32(dbg->fd(), 100).status()));

  // --only-keep-debug: .eh_frame is NOBITS, .debug_frame and .symtab kept.
  EXPECT_FALSE(d->has_eh_frame);
  EXPECT_TRUE(d->has_debug_frame);
  EXPECT_TRUE(d->has_symtab);
  EXPECT_FALSE(d->debuglink.has_value());
}

TEST(ElfFileTest, MiniDebugInfoIsAnElfImageWithTheSameBuildId) {
  absl::StatusOr<ElfFile> main = ElfFile::Open(VariantPath("mini", kThreads));
  ASSERT_TRUE(main.ok()) << main.status();
  absl::StatusOr<ElfFacts> m = main->Facts();
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE(m->has_gnu_debugdata);
  EXPECT_FALSE(m->has_symtab);
  absl::Span<const uint8_t> xz = main->RawSectionBytes(".gnu_debugdata");
  ASSERT_GT(xz.size(), 6u);
  EXPECT_EQ(xz[0], 0xfd);  // xz magic FD '7zXZ'

  absl::StatusOr<std::vector<uint8_t>> image = DecompressXz(xz, 1 << 20);
  ASSERT_TRUE(image.ok()) << image.status();
  auto shared = std::make_shared<const std::vector<uint8_t>>(*std::move(image));
  absl::StatusOr<ElfFile> mini = ElfFile::FromImage(shared, "mini");
  ASSERT_TRUE(mini.ok()) << mini.status();
  absl::StatusOr<ElfFacts> f = mini->Facts();
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->build_id, m->build_id);
  EXPECT_TRUE(f->has_symtab);
  EXPECT_TRUE(f->has_debug_frame);

  // Fedora's recipe: symbols only.
  absl::StatusOr<ElfFile> fedora = ElfFile::Open(VariantPath("mini_symtab", kThreads));
  ASSERT_TRUE(fedora.ok());
  absl::StatusOr<std::vector<uint8_t>> img2 =
      DecompressXz(fedora->RawSectionBytes(".gnu_debugdata"), 1 << 20);
  ASSERT_TRUE(img2.ok());
  absl::StatusOr<ElfFile> mini2 = ElfFile::FromImage(
      std::make_shared<const std::vector<uint8_t>>(*std::move(img2)), "mini2");
  ASSERT_TRUE(mini2.ok());
  EXPECT_TRUE(mini2->Facts()->has_symtab);
  EXPECT_FALSE(mini2->Facts()->has_debug_frame);
}

TEST(XzTest, BoundsAndDamage) {
  absl::StatusOr<ElfFile> main = ElfFile::Open(VariantPath("mini", kThreads));
  ASSERT_TRUE(main.ok());
  absl::Span<const uint8_t> xz = main->RawSectionBytes(".gnu_debugdata");
  absl::StatusOr<std::vector<uint8_t>> whole = DecompressXz(xz, 1 << 20);
  ASSERT_TRUE(whole.ok());
  // Exactly the size is allowed; one byte less is not.
  EXPECT_TRUE(DecompressXz(xz, whole->size()).ok());
  EXPECT_TRUE(absl::IsResourceExhausted(DecompressXz(xz, whole->size() - 1).status()));
  // Truncated, corrupted, empty, not xz at all.
  EXPECT_TRUE(absl::IsDataLoss(DecompressXz(xz.subspan(0, xz.size() / 2), 1 << 20).status()));
  std::vector<uint8_t> bad(xz.begin(), xz.end());
  bad[bad.size() / 2] ^= 0xff;
  EXPECT_FALSE(DecompressXz(bad, 1 << 20).ok());
  EXPECT_TRUE(absl::IsDataLoss(DecompressXz({}, 1 << 20).status()));
  EXPECT_TRUE(absl::IsDataLoss(DecompressXz(Bytes("not xz at all"), 1 << 20).status()));
}

TEST(ElfFileTest, ErrorsSayWhatIsWrongWithTheFile) {
  EXPECT_TRUE(absl::IsNotFound(ElfFile::Open("/nonexistent/file").status()));
  EXPECT_TRUE(absl::IsFailedPrecondition(ElfFile::Open("/").status()));
  EXPECT_TRUE(absl::IsDataLoss(ElfFile::Open("/proc/self/cmdline").status()) ||
              absl::IsFailedPrecondition(ElfFile::Open("/proc/self/cmdline").status()));
  auto junk = std::make_shared<const std::vector<uint8_t>>(Bytes("\x7f" "ELF junk"));
  EXPECT_FALSE(ElfFile::FromImage(junk, "junk").ok() &&
               ElfFile::FromImage(junk, "junk")->Facts().ok());
  EXPECT_TRUE(absl::IsDataLoss(
      ElfFile::FromImage(std::make_shared<const std::vector<uint8_t>>(), "e").status()));
}

}  // namespace
}  // namespace unwindd::locate
