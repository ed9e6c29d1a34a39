#include "proc/core_notes.h"

#include <cstdint>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "proc/testing/core_builder.h"

namespace unwindd::proc {
namespace {

using testing::PutLe;

std::vector<uint8_t> Note(const std::string& name, uint32_t type,
                          const std::vector<uint8_t>& desc) {
  std::vector<uint8_t> b;
  PutLe(b, 0, name.size() + 1, 4);
  PutLe(b, 4, desc.size(), 4);
  PutLe(b, 8, type, 4);
  b.insert(b.end(), name.begin(), name.end());
  b.resize((b.size() + 1 + 3) & ~size_t{3}, 0);
  b.insert(b.end(), desc.begin(), desc.end());
  b.resize((b.size() + 3) & ~size_t{3}, 0);
  return b;
}

std::vector<uint8_t> Concat(std::vector<uint8_t> a,
                            const std::vector<uint8_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(ParseNotesTest, ReadsNamesTypesAndDescriptions) {
  std::vector<uint8_t> bytes =
      Concat(Note("CORE", 1, {1, 2, 3}), Note("LINUX", 0x202, {9, 9, 9, 9, 9}));
  ParsedNotes n = ParseNotes(bytes, 0x1000, 4);
  ASSERT_TRUE(n.error.ok()) << n.error;
  ASSERT_EQ(n.notes.size(), 2u);
  EXPECT_EQ(n.notes[0].name, "CORE");
  EXPECT_EQ(n.notes[0].type, 1u);
  EXPECT_EQ(n.notes[0].desc.size(), 3u);
  EXPECT_EQ(n.notes[0].offset, 0x1000u);
  EXPECT_EQ(n.notes[1].name, "LINUX");
  EXPECT_EQ(n.notes[1].offset, 0x1000u + 24);
}

TEST(ParseNotesTest, TruncatedDescriptionKeepsEarlierNotes) {
  std::vector<uint8_t> bytes = Concat(
      Note("CORE", 1, {1, 2, 3, 4}), Note("CORE", 6, std::vector<uint8_t>(64)));
  bytes.resize(bytes.size() - 10);
  ParsedNotes n = ParseNotes(bytes, 0, 4);
  EXPECT_TRUE(absl::IsDataLoss(n.error)) << n.error;
  EXPECT_NE(n.error.message().find("offset 0x18"), std::string::npos)
      << n.error;
  EXPECT_EQ(n.notes.size(), 1u);
}

TEST(ParseNotesTest, LyingDescriptionSizeIsAnError) {
  std::vector<uint8_t> bytes = Note("CORE", 1, {1, 2, 3, 4});
  PutLe(bytes, 4, 0xfffffff0u, 4);  // descsz
  ParsedNotes n = ParseNotes(bytes, 0, 4);
  EXPECT_TRUE(absl::IsDataLoss(n.error));
  EXPECT_TRUE(n.notes.empty());
}

TEST(ParseNotesTest, HugeNameIsAnError) {
  std::vector<uint8_t> bytes = Note("CORE", 1, {});
  PutLe(bytes, 0, 100000, 4);
  EXPECT_TRUE(absl::IsDataLoss(ParseNotes(bytes, 0, 4).error));
}

TEST(ParseNotesTest, TrailingPaddingIsIgnored) {
  std::vector<uint8_t> bytes = Note("CORE", 1, {1});
  bytes.resize(bytes.size() + 8, 0);  // shorter than a header
  ParsedNotes n = ParseNotes(bytes, 0, 4);
  EXPECT_TRUE(n.error.ok());
  // An all-zero header is an empty note, which is valid.
  EXPECT_GE(n.notes.size(), 1u);
}

TEST(ParseNotesTest, EightByteAlignment) {
  std::vector<uint8_t> b;
  PutLe(b, 0, 4, 4);  // "GNU\0"
  PutLe(b, 4, 4, 4);
  PutLe(b, 8, 5, 4);
  b.insert(b.end(), {'G', 'N', 'U', 0, 1, 2, 3, 4, 0, 0, 0, 0});
  ParsedNotes n = ParseNotes(b, 0, 8);
  ASSERT_EQ(n.notes.size(), 1u);
  EXPECT_EQ(n.notes[0].desc[0], 1);
}

std::vector<uint8_t> NtFile(uint64_t count, uint64_t page,
                            const std::vector<std::vector<uint64_t>>& entries,
                            const std::vector<std::string>& names) {
  std::vector<uint8_t> d;
  PutLe(d, 0, count, 8);
  PutLe(d, 8, page, 8);
  size_t off = 16;
  for (const auto& e : entries) {
    for (uint64_t v : e) {
      PutLe(d, off, v, 8);
      off += 8;
    }
  }
  for (const std::string& n : names) {
    d.insert(d.end(), n.begin(), n.end());
    d.push_back(0);
  }
  return d;
}

TEST(ParseNtFileTest, EntriesWithByteOffsets) {
  auto d = NtFile(2, 4096, {{0x1000, 0x3000, 0}, {0x5000, 0x6000, 3}},
                  {"/bin/a", "/lib/b.so"});
  absl::StatusOr<std::vector<NtFileEntry>> f = ParseNtFile(d, 8);
  ASSERT_TRUE(f.ok()) << f.status();
  ASSERT_EQ(f->size(), 2u);
  EXPECT_EQ((*f)[1].start, 0x5000u);
  EXPECT_EQ((*f)[1].offset, 3u * 4096);
  EXPECT_EQ((*f)[1].path, "/lib/b.so");
}

TEST(ParseNtFileTest, CountLargerThanTheNoteIsDataLoss) {
  auto d = NtFile(1000000, 4096, {{0x1000, 0x2000, 0}}, {"/a"});
  EXPECT_TRUE(absl::IsDataLoss(ParseNtFile(d, 8).status()));
  d = NtFile(UINT64_MAX, 4096, {}, {});
  EXPECT_TRUE(absl::IsDataLoss(ParseNtFile(d, 8).status()));
}

TEST(ParseNtFileTest, MalformedEntriesAreDataLoss) {
  // end before start
  EXPECT_TRUE(absl::IsDataLoss(
      ParseNtFile(NtFile(1, 4096, {{0x3000, 0x2000, 0}}, {"/a"}), 8).status()));
  // page count * page size overflows
  EXPECT_TRUE(absl::IsDataLoss(
      ParseNtFile(NtFile(1, 4096, {{0x1000, 0x2000, UINT64_MAX / 2}}, {"/a"}),
                  8)
          .status()));
  // page size not a power of two
  EXPECT_TRUE(absl::IsDataLoss(
      ParseNtFile(NtFile(1, 4095, {{0x1000, 0x2000, 0}}, {"/a"}), 8).status()));
  // fewer names than entries (the last one unterminated)
  auto d = NtFile(2, 4096, {{0x1000, 0x2000, 0}, {0x2000, 0x3000, 0}}, {"/a"});
  d.push_back('x');
  d.push_back('y');
  EXPECT_TRUE(absl::IsDataLoss(ParseNtFile(d, 8).status()));
  // too short for the header
  EXPECT_TRUE(
      absl::IsDataLoss(ParseNtFile(std::vector<uint8_t>(12), 8).status()));
}

TEST(ParseNtFileTest, ThirtyTwoBitWords) {
  std::vector<uint8_t> d;
  PutLe(d, 0, 1, 4);
  PutLe(d, 4, 4096, 4);
  PutLe(d, 8, 0x8048000, 4);
  PutLe(d, 12, 0x8049000, 4);
  PutLe(d, 16, 0, 4);
  d.insert(d.end(), {'/', 'x', 0});
  absl::StatusOr<std::vector<NtFileEntry>> f = ParseNtFile(d, 4);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ((*f)[0].end, 0x8049000u);
}

TEST(ParseAuxvTest, StopsAtAtNull) {
  std::vector<uint8_t> d;
  PutLe(d, 0, 3, 8);
  PutLe(d, 8, 0x400040, 8);
  PutLe(d, 16, 0, 8);
  PutLe(d, 24, 0, 8);
  PutLe(d, 32, 9, 8);  // after AT_NULL: ignored
  PutLe(d, 40, 1, 8);
  auto a = ParseAuxv(d, 8);
  ASSERT_TRUE(a.ok());
  ASSERT_EQ(a->size(), 1u);
  EXPECT_EQ((*a)[0].second, 0x400040u);
  d.resize(20);
  EXPECT_TRUE(absl::IsDataLoss(ParseAuxv(d, 8).status()));
}

TEST(ParsePrpsInfoTest, PidAndName) {
  std::vector<uint8_t> d(136, 0);
  PutLe(d, 24, 4242, 4);
  std::string name = "threads_c_O2_nofp";  // longer than pr_fname
  for (size_t i = 0; i < 16; ++i) d[40 + i] = name[i];
  auto p = ParsePrpsInfo(d, 8);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->pid, 4242);
  EXPECT_EQ(p->fname, name.substr(0, 16));
  EXPECT_TRUE(
      absl::IsDataLoss(ParsePrpsInfo(std::vector<uint8_t>(50), 8).status()));
}

TEST(ParseSigInfoTest, FaultAddressAndSender) {
  std::vector<uint8_t> d(128, 0);
  PutLe(d, 0, 11, 4);
  PutLe(d, 8, 1, 4);  // SEGV_MAPERR
  PutLe(d, 16, 0xdead, 8);
  auto s = ParseSigInfo(d, 8);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->number, 11);
  EXPECT_EQ(s->fault_address, 0xdeadu);
  EXPECT_FALSE(s->sender_pid.has_value());
  PutLe(d, 0, 3, 4);  // SIGQUIT
  PutLe(d, 8, 0, 4);  // SI_USER
  PutLe(d, 16, 77, 4);
  s = ParseSigInfo(d, 8);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->sender_pid, 77);
  EXPECT_FALSE(s->fault_address.has_value());
  EXPECT_TRUE(
      absl::IsDataLoss(ParseSigInfo(std::vector<uint8_t>(100), 8).status()));
}

TEST(SignalNamesTest, Names) {
  EXPECT_EQ(SignalName(11), "SIGSEGV");
  EXPECT_EQ(SignalName(35), "SIGRTMIN+3");
  EXPECT_EQ(SignalName(99), "SIG99");
  EXPECT_EQ(SignalCodeName(11, 2), "SEGV_ACCERR");
  EXPECT_EQ(SignalCodeName(6, -6), "SI_TKILL");
  EXPECT_EQ(SignalCodeName(11, 99), "");
}

}  // namespace
}  // namespace unwindd::proc
