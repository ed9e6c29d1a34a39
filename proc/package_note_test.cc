#include "proc/package_note.h"

#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "memory/testing/map_memory.h"

namespace unwindd::proc {
namespace {

// One ELF note (gABI "Note Section"): namesz, descsz, type, name, desc,
// each padded to 4 bytes.
std::vector<uint8_t> Note(const std::string& name, uint32_t type, const std::string& desc) {
  std::vector<uint8_t> out;
  auto u32 = [&](uint32_t v) {
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
  };
  u32(static_cast<uint32_t>(name.size() + 1));
  u32(static_cast<uint32_t>(desc.size()));
  u32(type);
  out.insert(out.end(), name.begin(), name.end());
  out.push_back(0);
  while (out.size() % 4) out.push_back(0);
  out.insert(out.end(), desc.begin(), desc.end());
  while (out.size() % 4) out.push_back(0);
  return out;
}

constexpr char kJson[] =
    R"({"type":"rpm","os":"fedora","osVersion":"40","name":"coreutils",)"
    R"("version":"9.4-7.fc40","architecture":"x86_64",)"
    R"("osCpe":"cpe:/o:fedoraproject:fedora:40","extra":{"a":[1,2]},"n":5})";

TEST(PackageNoteTest, FindsTheFdoNoteAmongOthersAndKeepsEveryField) {
  std::vector<uint8_t> notes = Note("GNU", 3, std::string(20, '\x11'));  // a build-id
  std::vector<uint8_t> pkg = Note("FDO", kPackageNoteType, std::string(kJson) + '\0');
  notes.insert(notes.end(), pkg.begin(), pkg.end());
  absl::StatusOr<PackageNote> p = FindPackageNote(notes);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->Get("type"), "rpm");
  EXPECT_EQ(p->Get("name"), "coreutils");
  EXPECT_EQ(p->Get("version"), "9.4-7.fc40");
  EXPECT_EQ(p->Get("osCpe"), "cpe:/o:fedoraproject:fedora:40");
  EXPECT_EQ(p->Get("debugInfoUrl"), "");
  // Keys nobody listed are kept, in the note's order; other values as JSON.
  ASSERT_EQ(p->fields.size(), 9u);
  EXPECT_EQ(p->fields[0].first, "type");
  EXPECT_EQ(p->fields[7].first, "extra");
  EXPECT_EQ(p->fields[7].second, R"({"a":[1,2]})");
  EXPECT_EQ(p->Get("n"), "5");
}

TEST(PackageNoteTest, OnlyOwnerFdoAndTheTypeCount) {
  EXPECT_TRUE(absl::IsNotFound(
      FindPackageNote(Note("FDO", 3, std::string(kJson) + '\0')).status()));
  EXPECT_TRUE(absl::IsNotFound(
      FindPackageNote(Note("GNU", kPackageNoteType, std::string(kJson) + '\0')).status()));
  EXPECT_TRUE(absl::IsNotFound(
      FindPackageNote(Note("FDOX", kPackageNoteType, std::string(kJson) + '\0')).status()));
  EXPECT_TRUE(absl::IsNotFound(FindPackageNote({}).status()));
}

// A file's note areas (sections, or segments): the first that holds the
// note, or is malformed before one, answers; areas without one are passed.
TEST(PackageNoteTest, FindsTheNoteInTheFirstAreaThatSays) {
  const std::vector<uint8_t> build_id = Note("GNU", 3, std::string(20, '\x11'));
  const std::vector<uint8_t> pkg = Note("FDO", kPackageNoteType, std::string(kJson) + '\0');
  std::vector<uint8_t> cut = pkg;
  cut.resize(cut.size() - 8);  // its descriptor runs past the end
  using Areas = std::vector<absl::Span<const uint8_t>>;
  absl::StatusOr<PackageNote> p = FindPackageNoteInAreas(Areas{build_id, pkg});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->Get("name"), "coreutils");
  EXPECT_TRUE(absl::IsDataLoss(FindPackageNoteInAreas(Areas{build_id, cut, pkg}).status()));
  EXPECT_TRUE(absl::IsNotFound(FindPackageNoteInAreas(Areas{build_id}).status()));
  EXPECT_TRUE(absl::IsNotFound(FindPackageNoteInAreas(Areas{}).status()));
}

TEST(PackageNoteTest, MalformedNotesAndJsonAreDataLoss) {
  std::vector<uint8_t> n = Note("FDO", kPackageNoteType, std::string(kJson) + '\0');
  n[4] = 0xff;  // descsz past the end
  n[5] = 0xff;
  EXPECT_TRUE(absl::IsDataLoss(FindPackageNote(n).status()));
  std::vector<uint8_t> name = Note("FDO", kPackageNoteType, "{}");
  name[0] = 0xf0;  // namesz past the end
  EXPECT_TRUE(absl::IsDataLoss(FindPackageNote(name).status()));
  for (const char* bad : {"", "[1,2]", "{\"a\":", "\"str\"", "{\"a\":1}x"}) {
    EXPECT_TRUE(absl::IsDataLoss(ParsePackageNote(bad).status())) << bad;
  }
  EXPECT_TRUE(absl::IsDataLoss(
      ParsePackageNote(std::string(200, '[') + std::string(200, ']')).status()));
  std::string deep = "{\"a\":" + std::string(100, '[') + std::string(100, ']') + "}";
  EXPECT_TRUE(absl::IsDataLoss(ParsePackageNote(deep).status()));
  EXPECT_TRUE(absl::IsDataLoss(
      ParsePackageNote("{\"a\":\"" + std::string(kMaxPackageNoteBytes, 'x') + "\"}").status()));
  // Zero padding after the terminator is fine.
  EXPECT_TRUE(ParsePackageNote(std::string("{\"a\":\"b\"}\0\0\0", 12)).ok());
}

TEST(PackageNoteTest, ReadsTheNoteOfARealBinaryWithLibelf) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const std::string crasher =
      absl::StrCat(srcdir ? srcdir : ".", "/unwindd/testdata/coredump/crasher");
  absl::StatusOr<PackageNote> p = ReadPackageNoteFromFile(crasher);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->Get("name"), "unwindd-crasher");
  EXPECT_EQ(p->Get("version"), "1.2-3");
  EXPECT_EQ(p->Get("debugInfoUrl"), "https://debuginfod.debian.net");
  // A binary without one.
  EXPECT_TRUE(absl::IsNotFound(ReadPackageNoteFromFile("/proc/self/exe").status()));
  EXPECT_FALSE(ReadPackageNoteFromFile("/nonexistent").ok());
}

TEST(PackageNoteTest, ReadsTheNoteFromAnImageInMemory) {
  memory::testing::MapMemory mem;
  const std::vector<uint8_t> n = Note("FDO", kPackageNoteType, "{\"name\":\"x\"}");
  mem.Put(0x400300, n);
  ElfImage img;
  img.elf_class = 2;
  img.load_bias = 0x400000;
  img.phdrs.push_back({.type = 4 /* PT_NOTE */, .vaddr = 0x300, .filesz = n.size()});
  absl::StatusOr<PackageNote> p = ReadPackageNoteFromImage(mem, img, ElfView::kLoaded);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->Get("name"), "x");
  img.phdrs[0].vaddr = 0x900;  // not dumped
  EXPECT_TRUE(absl::IsNotFound(ReadPackageNoteFromImage(mem, img, ElfView::kLoaded).status()));
}

}  // namespace
}  // namespace unwindd::proc
