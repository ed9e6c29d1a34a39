// CoreFile over well-formed and malformed synthetic cores: every kind of
// damage gives an error or a warning, never a crash, and whatever can still
// be used is.
#include "proc/core_file.h"

#include <elf.h>
#include <fcntl.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "memory/file_region_memory.h"
#include "memory/scoped_fd.h"
#include "proc/testing/core_builder.h"

namespace unwindd::proc {
namespace {

using testing::CoreBuilder;
using testing::CoreLayout;
using testing::PutLe;

absl::StatusOr<CoreFile> ReadBytes(const std::vector<uint8_t>& bytes) {
  std::string path = testing::WriteTempFile(bytes);
  auto fd = std::make_shared<memory::ScopedFd>(
      memory::OpenCloexec(path.c_str(), O_RDONLY));
  return CoreFile::Read(fd, bytes.size(), "test.core");
}

bool HasWarning(const CoreFile& c, absl::string_view text) {
  for (const std::string& w : c.warnings()) {
    if (absl::StrContains(w, text)) return true;
  }
  return false;
}

CoreBuilder TwoThreads() {
  CoreBuilder b;
  b.AddThread(100, 0x401000, 0x7ffd1000, 11);
  b.SetPrpsInfo(100, "prog");
  b.AddSigInfo(11, 1, 0x10);
  b.SetAuxv({{9, 0x401000}});
  b.SetNtFile({{0x400000, 0x402000, 0, "/bin/prog"}});
  b.AddThread(101, 0x401100, 0x7ffd2000);
  b.AddSegment(0x7ffd0000, std::vector<uint8_t>(0x3000, 0xab));
  return b;
}

TEST(CoreFileTest, ReadsThreadsNotesAndSegments) {
  absl::StatusOr<CoreFile> c = ReadBytes(TwoThreads().Build());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->arch(), arch::Arch::kX86_64);
  ASSERT_EQ(c->threads().size(), 2u);
  EXPECT_EQ(c->threads()[0].tid, 100);
  ASSERT_TRUE(c->threads()[0].regs.ok());
  EXPECT_EQ(c->threads()[0].regs->pc(), 0x401000u);
  EXPECT_EQ(c->threads()[0].regs->sp(), 0x7ffd1000u);
  ASSERT_TRUE(c->threads()[0].signal.has_value());
  EXPECT_EQ(c->threads()[0].signal->fault_address, 0x10u);
  EXPECT_FALSE(c->threads()[1].signal.has_value());
  EXPECT_EQ(c->prpsinfo()->pid, 100);
  EXPECT_EQ(c->Auxv(9), 0x401000u);
  ASSERT_TRUE(c->nt_file().has_value());
  EXPECT_EQ((*c->nt_file())[0].path, "/bin/prog");
  ASSERT_EQ(c->segments().size(), 1u);
  EXPECT_EQ(c->segments()[0].in_file, 0x3000u);
  EXPECT_TRUE(c->warnings().empty());
}

TEST(CoreFileTest, NotAnElfFileIsInvalidArgument) {
  EXPECT_TRUE(absl::IsInvalidArgument(ReadBytes({'h', 'i', '\n'}).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(ReadBytes({}).status()));
  // What it starts with instead is named, to tell damage from a mix-up.
  absl::Status s = ReadBytes({0x28, 0xb5, 0x2f, 0xfd, 0, 0}).status();
  EXPECT_TRUE(absl::StrContains(s.message(), "no ELF magic: it starts 28b52ffd; 6 bytes")) << s;
}

TEST(CoreFileTest, AnUnreadableFileSaysWhy) {
  // A directory opens but cannot be read (EISDIR): an I/O error, not a
  // file "with no ELF magic".
  auto fd = std::make_shared<memory::ScopedFd>(memory::OpenCloexec("/", O_RDONLY));
  absl::Status s = CoreFile::Read(fd, 4096, "dir").status();
  EXPECT_FALSE(absl::IsInvalidArgument(s)) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "dir: reading its ELF header")) << s;
}

TEST(CoreFileTest, AnExecutableIsNotACore) {
  std::vector<uint8_t> b = TwoThreads().Build();
  PutLe(b, 16, ET_EXEC, 2);
  absl::Status s = ReadBytes(b).status();
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
}

TEST(CoreFileTest, UnsupportedMachineIsUnimplemented) {
  std::vector<uint8_t> b = TwoThreads().Build();
  PutLe(b, 18, EM_RISCV, 2);
  EXPECT_TRUE(absl::IsUnimplemented(ReadBytes(b).status()));
}

TEST(CoreFileTest, ProgramHeadersPastTheEndAreDataLoss) {
  std::vector<uint8_t> b = TwoThreads().Build();
  PutLe(b, 32, b.size() - 10, 8);  // e_phoff
  absl::Status s = ReadBytes(b).status();
  EXPECT_TRUE(absl::IsDataLoss(s)) << s;
  b = TwoThreads().Build();
  PutLe(b, 56, 0xfff0, 2);  // e_phnum far beyond the file
  EXPECT_TRUE(absl::IsDataLoss(ReadBytes(b).status()));
  b = TwoThreads().Build();
  PutLe(b, 54, 40, 2);  // e_phentsize
  EXPECT_TRUE(absl::IsDataLoss(ReadBytes(b).status()));
}

TEST(CoreFileTest, NoThreadsIsDataLoss) {
  CoreBuilder b;
  b.SetPrpsInfo(1, "x");
  b.AddSegment(0x1000, std::vector<uint8_t>(16));
  absl::Status s = ReadBytes(b.Build()).status();
  EXPECT_TRUE(absl::IsDataLoss(s)) << s;
  EXPECT_NE(s.message().find("no threads"), std::string::npos) << s;
}

TEST(CoreFileTest, TruncatedNotesKeepTheThreadsBeforeTheCut) {
  CoreLayout l;
  std::vector<uint8_t> b = TwoThreads().Build(&l);
  // Cut inside the second thread's NT_PRSTATUS (the last note).
  b.resize(l.note_offsets.back() + 40);
  absl::StatusOr<CoreFile> c = ReadBytes(b);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->threads().size(), 1u);
  EXPECT_TRUE(HasWarning(*c, "bytes of description")) << c->warnings()[0];
  EXPECT_TRUE(HasWarning(*c, "truncated"));  // the segment is gone too
  ASSERT_EQ(c->segments().size(), 1u);
  EXPECT_EQ(c->segments()[0].in_file, 0u);
}

TEST(CoreFileTest, TruncatedNotesBeforeAnyThreadIsDataLoss) {
  CoreLayout l;
  std::vector<uint8_t> b = TwoThreads().Build(&l);
  b.resize(l.note_offsets[0] + 20);
  EXPECT_TRUE(absl::IsDataLoss(ReadBytes(b).status()));
}

TEST(CoreFileTest, TruncatedSegmentIsAWarning) {
  CoreLayout l;
  std::vector<uint8_t> b = TwoThreads().Build(&l);
  b.resize(l.segment_offsets[0] + 0x1000);
  absl::StatusOr<CoreFile> c = ReadBytes(b);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->threads().size(), 2u);
  EXPECT_EQ(c->segments()[0].in_file, 0x1000u);
  EXPECT_TRUE(HasWarning(*c, "0x2000 bytes of memory are missing"));
}

TEST(CoreFileTest, LyingSegmentSizes) {
  CoreLayout l;
  std::vector<uint8_t> b = TwoThreads().Build(&l);
  const size_t ph = l.phdrs + 56;  // the PT_LOAD
  PutLe(b, ph + 32, 0x100000, 8);  // p_filesz > p_memsz and > the file
  absl::StatusOr<CoreFile> c = ReadBytes(b);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->segments()[0].filesz, 0x3000u);  // clamped to memsz
  EXPECT_TRUE(HasWarning(*c, "filesz"));
  PutLe(b, ph + 40, UINT64_MAX - 0x10, 8);  // p_memsz wraps the address space
  c = ReadBytes(b);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->segments().empty());
  EXPECT_TRUE(HasWarning(*c, "overflows"));
  PutLe(b, ph + 8, UINT64_MAX - 4, 8);  // p_offset
  PutLe(b, ph + 40, 0x3000, 8);
  c = ReadBytes(b);
  ASSERT_TRUE(c.ok()) << c.status();
}

TEST(CoreFileTest, OverlappingSegmentsAreReported) {
  CoreBuilder b = TwoThreads();
  b.AddSegment(0x7ffd1000, std::vector<uint8_t>(0x1000, 0xcd));
  absl::StatusOr<CoreFile> c = ReadBytes(b.Build());
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(HasWarning(*c, "overlap"));
}

TEST(CoreFileTest, NtFilePointingOutsideTheFile) {
  // The NT_FILE note's description runs past the end of the core.
  CoreBuilder b;
  b.AddThread(7, 0x1000, 0x2000);
  b.SetNtFile({{0x400000, 0x401000, 0, "/bin/x"}});
  CoreLayout l;
  std::vector<uint8_t> bytes = b.Build(&l);
  PutLe(bytes, l.note_offsets[1] + 4, 0x100000, 4);  // descsz
  PutLe(bytes, l.phdrs + 32, 0x100000, 8);           // PT_NOTE p_filesz
  absl::StatusOr<CoreFile> c = ReadBytes(bytes);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->threads().size(), 1u);
  EXPECT_FALSE(c->nt_file().has_value());
  EXPECT_FALSE(c->warnings().empty());
  // An NT_FILE whose count does not fit its own note.
  CoreBuilder b2;
  b2.AddThread(7, 0x1000, 0x2000);
  b2.SetNtFile({{0x400000, 0x401000, 0, "/bin/x"}});
  bytes = b2.Build(&l);
  PutLe(bytes, l.note_offsets[1] + 20, 5000, 8);  // count
  c = ReadBytes(bytes);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->nt_file().has_value());
  EXPECT_TRUE(HasWarning(*c, "NT_FILE"));
}

TEST(CoreFileTest, ShortPrStatusNamesTheThreadWithAnError) {
  CoreBuilder b;
  b.AddThread(5, 0x1000, 0x2000);
  b.AddNote("CORE", NT_PRSTATUS, std::vector<uint8_t>(40, 0));
  std::vector<uint8_t> d(40, 0);
  PutLe(d, 32, 6, 4);
  b.AddNote("CORE", NT_PRSTATUS, d);
  b.AddNote("CORE", NT_PRSTATUS, std::vector<uint8_t>(10, 0));  // unnamed
  absl::StatusOr<CoreFile> c = ReadBytes(b.Build());
  ASSERT_TRUE(c.ok()) << c.status();
  // Thread 5, then pid 0 (from the first short note), then 6.
  ASSERT_EQ(c->threads().size(), 3u);
  EXPECT_TRUE(c->threads()[0].regs.ok());
  EXPECT_TRUE(absl::IsDataLoss(c->threads()[2].regs.status()));
  EXPECT_EQ(c->threads()[2].tid, 6);
}

TEST(CoreFileTest, DuplicateThreadIsIgnored) {
  CoreBuilder b;
  b.AddThread(5, 0x1000, 0x2000);
  b.AddThread(5, 0x3000, 0x4000);
  absl::StatusOr<CoreFile> c = ReadBytes(b.Build());
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(c->threads().size(), 1u);
  EXPECT_EQ(c->threads()[0].regs->pc(), 0x1000u);
  EXPECT_TRUE(HasWarning(*c, "second NT_PRSTATUS"));
}

TEST(CoreFileTest, GarbageNotesNeverCrash) {
  // Every prefix of a valid core, and bytes flipped all over its headers.
  std::vector<uint8_t> good = TwoThreads().Build();
  for (size_t n = 0; n < 1200 && n < good.size(); n += 7) {
    std::vector<uint8_t> cut(good.begin(), good.begin() + n);
    (void)ReadBytes(cut);
  }
  for (size_t i = 0; i < 1200 && i < good.size(); i += 3) {
    std::vector<uint8_t> bad = good;
    bad[i] ^= 0xff;
    (void)ReadBytes(bad);
  }
}

}  // namespace
}  // namespace unwindd::proc
