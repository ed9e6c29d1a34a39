#include "proc/minidump/reader.h"

#include <sys/mman.h>
#include <unistd.h>

#include <memory>

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proc/minidump/context.h"
#include "proc/minidump/format.h"
#include "proc/minidump/testing/minidump_builder.h"

namespace unwindd::proc::minidump {
namespace {

using testing::ElfCvRecord;
using testing::ExceptionStream;
using testing::MemoryList;
using testing::MinidumpBuilder;
using testing::ModuleList;
using testing::RawModule;
using testing::SystemInfoStream;
using testing::Text;
using testing::ThreadList;
using ::testing::HasSubstr;

absl::StatusOr<MinidumpFile> ReadBytes(const std::vector<uint8_t>& bytes) {
  auto fd = std::make_shared<memory::ScopedFd>(memfd_create("md", MFD_CLOEXEC));
  EXPECT_EQ(write(fd->get(), bytes.data(), bytes.size()),
            static_cast<ssize_t>(bytes.size()));
  return MinidumpFile::Read(fd, bytes.size(), "test.dmp");
}

bool AnyWarning(const MinidumpFile& f, absl::string_view text) {
  for (const std::string& w : f.warnings()) {
    if (absl::StrContains(w, text)) return true;
  }
  return false;
}

// One thread with a context and 16 stack bytes, the building blocks of
// most tests below.
struct Basic {
  MinidumpBuilder b;
  uint32_t stack_rva = 0;
  Location ctx;
};

Basic MakeBasic(bool padded = false) {
  Basic m;
  arch::RegisterSet regs(arch::Arch::kX86_64);
  regs.set_pc(0x401000);
  regs.set_sp(0x7ffd0000);
  const std::vector<uint8_t> ctx = WriteContext(regs);
  m.ctx = {static_cast<uint32_t>(ctx.size()), m.b.Add(ctx)};
  m.stack_rva = m.b.Add(std::vector<uint8_t>(16, 0xab));
  ThreadEntry t;
  t.tid = 42;
  t.stack = {0x7ffd0000, 16, m.stack_rva};
  t.context = m.ctx;
  m.b.Stream(kThreadListStream, ThreadList({t}, padded));
  m.b.Stream(kSystemInfoStream, SystemInfoStream(kCpuAmd64, kPlatformLinux));
  return m;
}

TEST(MinidumpReaderTest, ReadsThreadsModulesMemoryAndLinuxStreams) {
  Basic m = MakeBasic();
  const uint32_t name = m.b.AddString("/usr/lib/libfoo.so");
  const std::vector<uint8_t> cv = ElfCvRecord("0102030405060708090a0b0c0d0e0f1011121314");
  const uint32_t cv_rva = m.b.Add(cv);
  m.b.Stream(kModuleListStream,
             ModuleList({{0x7f0000000000, 0x5000, name,
                          {static_cast<uint32_t>(cv.size()), cv_rva}}}));
  m.b.Stream(kMemoryListStream, MemoryList({{0x7ffd0000, 16, m.stack_rva}}));
  m.b.Stream(kLinuxMaps, Text("7f0000000000-7f0000005000 r-xp 00000000 08:01 12 /usr/lib/libfoo.so\n"));
  m.b.Stream(kLinuxCmdLine, Text(std::string("prog\0--flag\0", 12)));
  m.b.Stream(kLinuxLsbRelease, Text("DISTRIB_DESCRIPTION=\"Debian 12\"\n"));
  absl::StatusOr<MinidumpFile> f = ReadBytes(m.b.Build());
  ASSERT_TRUE(f.ok()) << f.status();
  ASSERT_EQ(f->threads().size(), 1u);
  EXPECT_EQ(f->threads()[0].tid, 42u);
  EXPECT_EQ(f->threads()[0].stack.start, 0x7ffd0000u);
  EXPECT_EQ(f->threads()[0].context.size, 1232u);
  ASSERT_EQ(f->modules().size(), 1u);
  EXPECT_EQ(f->modules()[0].name, "/usr/lib/libfoo.so");
  EXPECT_EQ(f->modules()[0].build_id, "0102030405060708090a0b0c0d0e0f1011121314");
  EXPECT_EQ(f->modules()[0].cv_kind, "elf");
  EXPECT_EQ(f->modules()[0].size, 0x5000u);
  ASSERT_EQ(f->memory().size(), 1u);
  EXPECT_EQ(f->memory()[0].file_offset, m.stack_rva);
  ASSERT_TRUE(f->linux_streams().maps.has_value());
  EXPECT_EQ(f->linux_streams().cmdline->size(), 12u);
  ASSERT_TRUE(f->system_info().has_value());
  EXPECT_EQ(f->system_info()->cpu_architecture, kCpuAmd64);
  EXPECT_TRUE(f->warnings().empty());
}

TEST(MinidumpReaderTest, AcceptsListsPaddedAfterTheirCount) {
  Basic m = MakeBasic(/*padded=*/true);
  absl::StatusOr<MinidumpFile> f = ReadBytes(m.b.Build());
  ASSERT_TRUE(f.ok()) << f.status();
  ASSERT_EQ(f->threads().size(), 1u);
  EXPECT_EQ(f->threads()[0].tid, 42u);
}

TEST(MinidumpReaderTest, RejectsWhatIsNotAMinidump) {
  absl::StatusOr<MinidumpFile> f = ReadBytes(std::vector<uint8_t>(64, 0x7f));
  EXPECT_TRUE(absl::IsDataLoss(f.status())) << f.status();
  EXPECT_THAT(std::string(f.status().message()), HasSubstr("not a minidump"));
  f = ReadBytes({'M', 'D'});
  EXPECT_TRUE(absl::IsDataLoss(f.status())) << f.status();
}

TEST(MinidumpReaderTest, DirectoryPastTheEndIsDataLoss) {
  std::vector<uint8_t> bytes = MakeBasic().b.Build();
  bytes[12] = 0xf0;  // stream_directory_rva far past the end
  bytes[13] = 0xff;
  absl::StatusOr<MinidumpFile> f = ReadBytes(bytes);
  EXPECT_TRUE(absl::IsDataLoss(f.status())) << f.status();
  EXPECT_THAT(std::string(f.status().message()), HasSubstr("stream directory"));
}

TEST(MinidumpReaderTest, TooManyStreamsIsDataLoss) {
  std::vector<uint8_t> bytes = MakeBasic().b.Build();
  bytes[8] = 0xff;  // stream_count 0xffffff..
  bytes[9] = 0xff;
  bytes[10] = 0xff;
  absl::StatusOr<MinidumpFile> f = ReadBytes(bytes);
  EXPECT_TRUE(absl::IsDataLoss(f.status())) << f.status();
}

TEST(MinidumpReaderTest, AThreadListThatLiesIsDataLoss) {
  MinidumpBuilder b;
  std::vector<uint8_t> list = ThreadList({ThreadEntry{}});
  list[0] = 0xff;  // 255 threads in the space of one
  b.Stream(kThreadListStream, list);
  absl::StatusOr<MinidumpFile> f = ReadBytes(b.Build());
  EXPECT_TRUE(absl::IsDataLoss(f.status())) << f.status();
  EXPECT_THAT(std::string(f.status().message()), HasSubstr("claims 255 threads"));

  MinidumpBuilder none;
  none.Stream(kThreadListStream, ThreadList({}));
  f = ReadBytes(none.Build());
  EXPECT_TRUE(absl::IsDataLoss(f.status())) << f.status();

  MinidumpBuilder missing;
  missing.Stream(kSystemInfoStream, SystemInfoStream(kCpuAmd64, kPlatformLinux));
  f = ReadBytes(missing.Build());
  EXPECT_THAT(std::string(f.status().message()), HasSubstr("no thread list"));
}

TEST(MinidumpReaderTest, AStreamPastTheEndOfTheFileIsDataLoss) {
  MinidumpBuilder b;
  b.StreamAt(kThreadListStream, 0x10000, 0x40);
  absl::StatusOr<MinidumpFile> f = ReadBytes(b.Build());
  EXPECT_TRUE(absl::IsDataLoss(f.status())) << f.status();
  EXPECT_THAT(std::string(f.status().message()), HasSubstr("past the end"));
}

TEST(MinidumpReaderTest, MalformedOptionalStreamsAreWarningsAndLeftOut) {
  Basic m = MakeBasic();
  std::vector<uint8_t> modules = ModuleList({RawModule{}, RawModule{}});
  modules[0] = 200;  // 200 modules in the space of two
  m.b.Stream(kModuleListStream, modules);
  // A range whose bytes are not in the file, then a good one.
  m.b.Stream(kMemoryListStream,
             MemoryList({{0x1000, 0x100000, 0x10}, {0x7ffd0000, 16, m.stack_rva}}));
  m.b.StreamAt(kExceptionStream, 8, m.stack_rva);        // too short
  m.b.StreamAt(kLinuxMaps, 0x7fffffff, 0x7fffff00);      // far past the end
  absl::StatusOr<MinidumpFile> f = ReadBytes(m.b.Build());
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_TRUE(f->modules().empty());
  EXPECT_TRUE(AnyWarning(*f, "200 modules do not fit"));
  ASSERT_EQ(f->memory().size(), 1u);
  EXPECT_EQ(f->memory()[0].start, 0x7ffd0000u);
  EXPECT_TRUE(AnyWarning(*f, "memory range at 0x1000"));
  EXPECT_FALSE(f->exception().has_value());
  EXPECT_TRUE(AnyWarning(*f, "exception stream: too short"));
  EXPECT_FALSE(f->linux_streams().maps.has_value());
  EXPECT_TRUE(AnyWarning(*f, "maps:"));
}

TEST(MinidumpReaderTest, ASecondStreamOfATypeIsIgnored) {
  Basic m = MakeBasic();
  m.b.Stream(kLinuxCmdLine, Text("first"));
  m.b.Stream(kLinuxCmdLine, Text("second"));
  absl::StatusOr<MinidumpFile> f = ReadBytes(m.b.Build());
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(*f->linux_streams().cmdline, "first");
  EXPECT_TRUE(AnyWarning(*f, "a second stream 0x47670006 is ignored"));
}

TEST(MinidumpReaderTest, ModuleNamesAndRecordsAreBounded) {
  Basic m = MakeBasic();
  // A name whose length is odd, one whose length is huge, a CodeView
  // record of another kind.
  std::vector<uint8_t> odd = {3, 0, 0, 0, 'a', 0, 'b', 0};
  const uint32_t odd_rva = m.b.Add(odd);
  std::vector<uint8_t> huge = {0, 0, 0, 0x10};
  const uint32_t huge_rva = m.b.Add(huge);
  const std::vector<uint8_t> pdb = {'R', 'S', 'D', 'S', 1, 2, 3, 4};
  const uint32_t pdb_rva = m.b.Add(pdb);
  m.b.Stream(kModuleListStream,
             ModuleList({{0x1000, 0x1000, odd_rva, {}},
                         {0x2000, 0x1000, huge_rva, {8, pdb_rva}}}));
  absl::StatusOr<MinidumpFile> f = ReadBytes(m.b.Build());
  ASSERT_TRUE(f.ok()) << f.status();
  ASSERT_EQ(f->modules().size(), 2u);
  EXPECT_EQ(f->modules()[0].name, "");
  EXPECT_EQ(f->modules()[0].cv_kind, "none");
  EXPECT_EQ(f->modules()[1].cv_kind, "pdb70");
  EXPECT_EQ(f->modules()[1].build_id, "");
  EXPECT_TRUE(AnyWarning(*f, "bad length 3"));
  EXPECT_TRUE(AnyWarning(*f, "bad length 268435456"));
}

TEST(MinidumpReaderTest, ReadsExceptionMiscInfoAndMemory64) {
  Basic m = MakeBasic();
  m.b.Stream(kExceptionStream, ExceptionStream(42, 11, 1, 0xdead, m.ctx));
  std::vector<uint8_t> misc(kMiscInfoSize, 0);
  StoreU32(misc, 0, kMiscInfoSize);
  StoreU32(misc, 4, kMiscInfoProcessId);
  StoreU32(misc, 8, 4242);
  m.b.Stream(kMiscInfoStream, misc);
  // Memory64List: two ranges whose bytes follow one another from base_rva.
  const uint32_t data = m.b.Add(std::vector<uint8_t>(48, 0x11));
  std::vector<uint8_t> m64(16 + 2 * 16, 0);
  StoreU64(m64, 0, 2);
  StoreU64(m64, 8, data);
  StoreU64(m64, 16, 0x10000);
  StoreU64(m64, 24, 16);
  StoreU64(m64, 32, 0x20000);
  StoreU64(m64, 40, 32);
  m.b.Stream(kMemory64ListStream, m64);
  absl::StatusOr<MinidumpFile> f = ReadBytes(m.b.Build());
  ASSERT_TRUE(f.ok()) << f.status();
  ASSERT_TRUE(f->exception().has_value());
  EXPECT_EQ(f->exception()->tid, 42u);
  EXPECT_EQ(f->exception()->code, 11u);
  EXPECT_EQ(f->exception()->flags, 1u);
  EXPECT_EQ(f->exception()->address, 0xdeadu);
  EXPECT_EQ(f->exception()->context.rva, m.ctx.rva);
  EXPECT_EQ(f->process_id(), 4242u);
  ASSERT_EQ(f->memory().size(), 2u);
  EXPECT_EQ(f->memory()[0].file_offset, data);
  EXPECT_EQ(f->memory()[1].file_offset, data + 16);
  EXPECT_EQ(f->memory()[1].size, 32u);
}

TEST(MinidumpReaderTest, Memory64RangesPastTheEndAreLeftOut) {
  Basic m = MakeBasic();
  std::vector<uint8_t> m64(16 + 16, 0);
  StoreU64(m64, 0, 1);
  StoreU64(m64, 8, 0x40);
  StoreU64(m64, 16, 0x10000);
  StoreU64(m64, 24, uint64_t{1} << 40);  // a terabyte
  m.b.Stream(kMemory64ListStream, m64);
  absl::StatusOr<MinidumpFile> f = ReadBytes(m.b.Build());
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_TRUE(f->memory().empty());
  EXPECT_TRUE(AnyWarning(*f, "memory64 range at 0x10000"));
}

TEST(MinidumpReaderTest, ReadsTheDsoDebugLinkMap) {
  Basic m = MakeBasic();
  const uint32_t name = m.b.AddString("/lib/libc.so.6");
  std::vector<uint8_t> map(kLinkMap64Size, 0);
  StoreU64(map, 0, 0x7f0000000000);
  StoreU32(map, 8, name);
  StoreU64(map, 16, 0x7f0000200000);
  const uint32_t map_rva = m.b.Add(map);
  std::vector<uint8_t> dbg(kDebug64Size, 0);
  StoreU32(dbg, 0, 1);
  StoreU32(dbg, 4, map_rva);
  StoreU32(dbg, 8, 1);
  StoreU64(dbg, 24, 0x7f1000000000);
  m.b.Stream(kLinuxDsoDebug, dbg);
  absl::StatusOr<MinidumpFile> f = ReadBytes(m.b.Build());
  ASSERT_TRUE(f.ok()) << f.status();
  ASSERT_TRUE(f->linux_streams().dso_debug.has_value());
  const DsoDebug& d = *f->linux_streams().dso_debug;
  EXPECT_EQ(d.ldbase, 0x7f1000000000u);
  ASSERT_EQ(d.link_map.size(), 1u);
  EXPECT_EQ(d.link_map[0].name, "/lib/libc.so.6");
  EXPECT_EQ(d.link_map[0].ld, 0x7f0000200000u);
}

TEST(MinidumpReaderTest, ManyModulesNamingOneStringAreBoundedInTotal) {
  Basic m = MakeBasic();
  const uint32_t name = m.b.AddString(std::string(kMaxStringBytes / 2, 'x'));
  std::vector<RawModule> mods(2 * (kMaxTotalStringBytes / kMaxStringBytes) + 8,
                              RawModule{0x1000, 0x1000, name, {}});
  m.b.Stream(kModuleListStream, ModuleList(mods));
  absl::StatusOr<MinidumpFile> f = ReadBytes(m.b.Build());
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_TRUE(AnyWarning(*f, "more than"));
  size_t named = 0;
  for (const ModuleEntry& e : f->modules()) named += !e.name.empty();
  EXPECT_LT(named, mods.size());
}

TEST(Utf16Test, ConvertsPairsAndReplacesLoneSurrogates) {
  EXPECT_EQ(Utf16ToUtf8({'a', 0xe9, 0x20ac}), "a\xc3\xa9\xe2\x82\xac");
  EXPECT_EQ(Utf16ToUtf8({0xd83d, 0xde00}), "\xf0\x9f\x98\x80");
  EXPECT_EQ(Utf16ToUtf8({0xd83d, 'x'}), "\xef\xbf\xbdx");
}

}  // namespace
}  // namespace unwindd::proc::minidump
