#include "proc/jit/gdb_jit.h"

#include <dlfcn.h>
#include <elf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "memory/factories.h"
#include "memory/testing/map_memory.h"
#include "proc/jit/elf_symbol.h"
#include "proc/jit/symfile.h"
#include "proc/jit/testing/symfile_writer.h"
#include "proc/maps.h"

// This test program is itself a runtime with the GDB JIT interface: the
// descriptor is in its .symtab (not exported), as in a JIT linked into an
// executable.
extern "C" {
struct jit_code_entry {
  jit_code_entry* next;
  jit_code_entry* prev;
  const char* symfile_addr;
  uint64_t symfile_size;
};
struct jit_descriptor {
  uint32_t version;
  uint32_t action_flag;
  jit_code_entry* relevant_entry;
  jit_code_entry* first_entry;
};
__attribute__((used)) jit_descriptor __jit_debug_descriptor = {1, 0, nullptr, nullptr};
}

namespace unwindd::proc::jit {
namespace {

using memory::testing::MapMemory;
using testing::EhFrame;
using testing::EhFramePcBeginOffset;
using testing::SymfileWriter;

constexpr uint64_t kDesc = 0x600000;

// A descriptor and a list of entries in `mem`: entries at 0x700000 + 0x40*i,
// symfile i at 0x800000 + 0x1000*i of `sizes[i]` bytes.
void PutList(MapMemory& mem, int word, const std::vector<uint64_t>& sizes,
             uint32_t version = 1) {
  mem.PutLe(kDesc, version, 4);
  mem.PutLe(kDesc + 4, 1, 4);
  mem.PutLe(kDesc + 8, sizes.empty() ? 0 : 0x700000, word);
  mem.PutLe(kDesc + 8 + word, sizes.empty() ? 0 : 0x700000, word);
  for (size_t i = 0; i < sizes.size(); ++i) {
    const uint64_t e = 0x700000 + 0x40 * i;
    mem.PutLe(e, i + 1 < sizes.size() ? e + 0x40 : 0, word);
    mem.PutLe(e + word, i > 0 ? e - 0x40 : 0, word);
    mem.PutLe(e + 2 * word, 0x800000 + 0x1000 * i, word);
    mem.PutLe(e + 3 * word, sizes[i], 8);
  }
}

TEST(GdbJitListTest, Walks64And32BitLists) {
  for (int word : {8, 4}) {
    MapMemory mem;
    PutList(mem, word, {10, 20, 30});
    absl::StatusOr<GdbJitList> l = ReadGdbJitList(mem, kDesc, word);
    ASSERT_TRUE(l.ok()) << l.status();
    EXPECT_EQ(l->version, 1u);
    EXPECT_EQ(l->action_flag, 1u);
    EXPECT_EQ(l->first_entry, 0x700000u);
    EXPECT_EQ(l->cut, "");
    ASSERT_EQ(l->entries.size(), 3u);
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(l->entries[i].addr, 0x700000u + 0x40 * i);
      EXPECT_EQ(l->entries[i].symfile_addr, 0x800000u + 0x1000 * i);
      // i386: symfile_size at offset 12 (u64 aligned to 4), not 16.
      EXPECT_EQ(l->entries[i].symfile_size, 10u * (i + 1)) << word;
    }
  }
}

TEST(GdbJitListTest, EmptyList) {
  MapMemory mem;
  PutList(mem, 8, {});
  absl::StatusOr<GdbJitList> l = ReadGdbJitList(mem, kDesc, 8);
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_TRUE(l->entries.empty());
  EXPECT_EQ(l->cut, "");
}

TEST(GdbJitListTest, CyclesEndTheWalk) {
  MapMemory mem;
  PutList(mem, 8, {1, 2, 3});
  mem.PutLe(0x700000 + 0x80, 0x700000 + 0x40, 8);  // the third's next: the second
  absl::StatusOr<GdbJitList> l = ReadGdbJitList(mem, kDesc, 8);
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->entries.size(), 3u);
  EXPECT_NE(l->cut.find("loops back to the entry at 0x700040"), std::string::npos) << l->cut;
  // An entry that is its own next.
  MapMemory self;
  PutList(self, 8, {1});
  self.PutLe(0x700000, 0x700000, 8);
  l = ReadGdbJitList(self, kDesc, 8);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->entries.size(), 1u);
  EXPECT_NE(l->cut.find("loops"), std::string::npos);
}

TEST(GdbJitListTest, LengthIsBounded) {
  MapMemory mem;
  PutList(mem, 8, std::vector<uint64_t>(300, 1));
  GdbJitLimits limits;
  limits.max_entries = 100;
  absl::StatusOr<GdbJitList> l = ReadGdbJitList(mem, kDesc, 8, limits);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->entries.size(), 100u);
  EXPECT_NE(l->cut.find("longer than 100"), std::string::npos) << l->cut;
}

TEST(GdbJitListTest, UnreadableEntryEndsTheWalk) {
  MapMemory mem;
  PutList(mem, 8, {1, 2});
  mem.PutLe(0x700040, 0xdead0000, 8);  // the second's next: nowhere
  absl::StatusOr<GdbJitList> l = ReadGdbJitList(mem, kDesc, 8);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->entries.size(), 2u);
  EXPECT_NE(l->cut.find("0xdead0000 is not readable"), std::string::npos) << l->cut;
}

TEST(GdbJitListTest, BadDescriptors) {
  MapMemory mem;
  EXPECT_TRUE(absl::IsOutOfRange(ReadGdbJitList(mem, kDesc, 8).status()));
  PutList(mem, 8, {1}, /*version=*/2);
  absl::Status s = ReadGdbJitList(mem, kDesc, 8).status();
  EXPECT_TRUE(absl::IsUnimplemented(s)) << s;
  EXPECT_NE(s.message().find("version 2"), std::string::npos);
  EXPECT_TRUE(absl::IsInvalidArgument(ReadGdbJitList(mem, kDesc, 3).status()));
}

std::vector<uint8_t> Object(uint64_t text_addr, uint64_t eh_addr, const std::string& fn) {
  SymfileWriter w;
  const size_t text = w.Section(".text", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, text_addr,
                                std::vector<uint8_t>(0x20, 0xc3));
  const size_t eh = w.Section(".eh_frame", SHT_PROGBITS, SHF_ALLOC, eh_addr, EhFrame({{0, 0x20}}));
  const size_t tsym = w.Symbol("", 0, 0, STT_SECTION, text, STB_LOCAL);
  w.Symbol(fn, 0, 0x20, STT_FUNC, text);
  w.Rela(eh, EhFramePcBeginOffset(0), R_X86_64_PC32, tsym, 0);
  return w.Build();
}

// Symfiles that are too large, unreadable or not ELF are warnings — one
// line per kind, however many — and the good ones are modules.
TEST(GdbJitRegionsTest, GoodAndBadSymfiles) {
  MapMemory mem;
  const std::vector<uint8_t> a = Object(0x7f0000002000, 0x7f0000000008, "a");
  const std::vector<uint8_t> b = Object(0x7f0000012000, 0x7f0000010008, "b");
  std::vector<uint64_t> sizes = {a.size(), uint64_t{1} << 40, 64, b.size(), 0};
  for (int i = 0; i < 50; ++i) sizes.push_back(100);  // unreadable
  PutList(mem, 8, sizes);
  mem.Put(0x800000, a);
  mem.Put(0x802000, std::vector<uint8_t>(64, 0x41));  // not ELF
  mem.Put(0x803000, b);
  absl::StatusOr<GdbJitList> l = ReadGdbJitList(mem, kDesc, 8);
  ASSERT_TRUE(l.ok());
  std::vector<std::string> warnings;
  std::vector<JitRegion> r = GdbJitRegions(mem, *l, {}, &warnings);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].code->name, "a");
  EXPECT_EQ(r[0].mapping.path, "jit-symfile-0x800000");
  EXPECT_EQ(r[0].mapping.start, 0x7f0000002000u);
  EXPECT_EQ(r[1].code->name, "b");
  EXPECT_EQ(r[1].mapping.path, "jit-symfile-0x803000");
  const std::string all = absl::StrJoin(warnings, "\n");
  EXPECT_EQ(warnings.size(), 3u) << all;
  EXPECT_NE(all.find("(and 49 more like it)"), std::string::npos) << all;
  EXPECT_NE(all.find("1099511627776 bytes (at most 67108864) (and 1 more like it)"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("no ELF magic"), std::string::npos) << all;
}

TEST(GdbJitRegionsTest, TotalBytesAreBounded) {
  MapMemory mem;
  const std::vector<uint8_t> a = Object(0x7f0000002000, 0x7f0000000008, "a");
  PutList(mem, 8, std::vector<uint64_t>(10, a.size()));
  for (int i = 0; i < 10; ++i) mem.Put(0x800000 + 0x1000 * i, a);
  absl::StatusOr<GdbJitList> l = ReadGdbJitList(mem, kDesc, 8);
  ASSERT_TRUE(l.ok());
  GdbJitLimits limits;
  // Each symfile costs its bytes plus its image's: room for two and a half.
  absl::StatusOr<SymfileCode> one = SymfileRegions(a, 0x800000, mem);
  ASSERT_TRUE(one.ok());
  const uint64_t each = a.size() + one->regions[0].code->elf->size();
  limits.max_total_bytes = 2 * each + each / 2;
  std::vector<std::string> warnings;
  std::vector<JitRegion> r = GdbJitRegions(mem, *l, limits, &warnings);
  EXPECT_EQ(r.size(), 2u);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("more than"), std::string::npos) << warnings[0];
}

TEST(ElfSymbolTest, DynsymThroughGnuHash) {
  // libc's malloc, found in its file and placed by its mapping, is where
  // the dynamic linker put it.
  void* libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(libc, nullptr);
  void* want = dlsym(libc, "malloc");
  absl::StatusOr<std::vector<Mapping>> maps = ReadMaps(getpid());
  ASSERT_TRUE(maps.ok());
  const Mapping* m = nullptr;
  for (const Mapping& x : *maps) {
    if (x.path.find("/libc.so.6") != std::string::npos && (m == nullptr || x.offset < m->offset)) {
      m = &x;
    }
  }
  ASSERT_NE(m, nullptr);
  absl::StatusOr<std::optional<ElfSymbol>> s = FindElfSymbol(m->path, "malloc");
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_TRUE(s->has_value());
  absl::StatusOr<uint64_t> bias = LoadBias((*s)->loads, m->start, m->offset);
  ASSERT_TRUE(bias.ok());
  EXPECT_EQ((*s)->value + *bias, reinterpret_cast<uint64_t>(want));
  s = FindElfSymbol(m->path, "no_such_symbol_here");
  ASSERT_TRUE(s.ok());
  EXPECT_FALSE(s->has_value());
  s = FindElfSymbol("/proc/self/status", "malloc");  // not ELF
  ASSERT_TRUE(s.ok());
  EXPECT_FALSE(s->has_value());
  // A FIFO is not waited on, nor read.
  const std::string fifo = ::testing::TempDir() + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  s = FindElfSymbol(fifo, "malloc");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_FALSE(s->has_value());
  // Not there: an error, so that the caller tries its next path.
  EXPECT_TRUE(absl::IsNotFound(FindElfSymbol("/nonexistent/file", "malloc").status()));
}

// This process as a target: its maps, its files, its memory.
class SelfTarget : public Target {
 public:
  SelfTarget() : mem_(memory::CreateProcessVmReadvMemory(getpid())) {
    maps_ = *ReadMaps(getpid());
  }
  arch::Arch arch() const override { return arch::Arch::kX86_64; }
  pid_t pid() const override { return getpid(); }
  std::vector<pid_t> Threads() const override { return {getpid()}; }
  absl::StatusOr<arch::RegisterSet> InitialRegisters(pid_t) override {
    return absl::UnimplementedError("not here");
  }
  memory::Memory& memory() override { return *mem_; }
  const std::vector<Mapping>& mappings() const override { return maps_; }
  // A path that is not there first: the next one is tried.
  std::vector<std::string> FileCandidates(const Mapping& m) const override {
    return {"/nonexistent" + m.path, m.path};
  }

 private:
  std::unique_ptr<memory::Memory> mem_;
  std::vector<Mapping> maps_;
};

// The whole path on a real process (this one): the descriptor by its
// .symtab symbol in a PIE, its list, a symfile registered as LLVM does.
TEST(FindGdbJitCodeTest, ThisProcess) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "the symfile is built for x86_64";
#endif
  static uint8_t code[0x40];
  static uint8_t eh_block[0x100];
  std::memset(code, 0xc3, sizeof(code));
  const uint64_t text = reinterpret_cast<uint64_t>(code);
  const uint64_t eh = reinterpret_cast<uint64_t>(eh_block);
  static std::vector<uint8_t> obj;
  obj = Object(text, eh, "jitted_fn");
  static jit_code_entry entry;
  entry = {nullptr, nullptr, reinterpret_cast<const char*>(obj.data()), obj.size()};
  __jit_debug_descriptor.first_entry = &entry;
  __jit_debug_descriptor.relevant_entry = &entry;
  SelfTarget self;
  const std::vector<uint64_t> d = FindGdbJitDescriptors(self);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0], reinterpret_cast<uint64_t>(&__jit_debug_descriptor));
  std::vector<std::string> warnings;
  std::vector<JitRegion> r = FindGdbJitCode(self, &warnings);
  EXPECT_TRUE(warnings.empty()) << absl::StrJoin(warnings, "\n");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].mapping.start, text);
  EXPECT_EQ(r[0].mapping.end, text + 0x20);
  EXPECT_EQ(r[0].code->name, "jitted_fn");
  EXPECT_EQ(r[0].mapping.path, SymfileModulePath(reinterpret_cast<uint64_t>(obj.data())));
  // A list that loops in the live process: a warning, the entry once.
  entry.next = &entry;
  warnings.clear();
  r = FindGdbJitCode(self, &warnings);
  EXPECT_EQ(r.size(), 1u);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("loops"), std::string::npos) << warnings[0];
  __jit_debug_descriptor.first_entry = nullptr;
  __jit_debug_descriptor.relevant_entry = nullptr;
}

}  // namespace
}  // namespace unwindd::proc::jit
