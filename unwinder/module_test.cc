#include "unwinder/module.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <link.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "testdata/harness/tools.h"
#include "unwinder/module_cache.h"

namespace unwindd::unwinder {
namespace {

// Frames at these PCs are where the thread is (looked up as they are).
constexpr arch::FrameAddress Ip(uint64_t pc) {
  return arch::FrameAddress::InstructionPointer(pc);
}

extern "C" __attribute__((noinline)) int ModuleTestFunction(int x) {
  asm volatile("" ::: "memory");
  return x * 3 + 1;
}

uint64_t MainProgramBias() {
  uint64_t bias = 0;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        *static_cast<uint64_t*>(data) = info->dlpi_addr;
        return 1;  // the first object is the main program
      },
      &bias);
  return bias;
}

std::string SelfExe() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return std::string(buf, n > 0 ? n : 0);
}

TEST(ModuleTest, OpensOwnExecutable) {
  absl::StatusOr<std::shared_ptr<Module>> m = Module::OpenFile(SelfExe());
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ((*m)->arch(), arch::Arch::kX86_64);
  EXPECT_TRUE((*m)->has_eh_frame());
  EXPECT_TRUE((*m)->has_eh_frame_hdr());
  // Debian's gcc always links with --build-id (20 bytes of SHA-1).
  EXPECT_EQ((*m)->build_id().size(), 40u);
}

TEST(ModuleTest, LoadBiasMatchesDynamicLinker) {
  // Read the maps before opening the module: libelf mmaps the file, and
  // that mapping (offset 0, at another address) is not the loaded image.
  std::ifstream maps("/proc/self/maps");
  std::string line, exe = SelfExe();
  std::vector<std::pair<uint64_t, uint64_t>> segments;  // start, offset
  while (std::getline(maps, line)) {
    if (line.size() < exe.size() ||
        line.compare(line.size() - exe.size(), exe.size(), exe) != 0) {
      continue;
    }
    std::vector<std::string> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
    std::vector<std::string> range = absl::StrSplit(f[0], '-');
    uint64_t start, offset;
    ASSERT_TRUE(absl::SimpleHexAtoi(range[0], &start));
    ASSERT_TRUE(absl::SimpleHexAtoi(f[2], &offset));
    segments.emplace_back(start, offset);
  }
  ASSERT_GT(segments.size(), 1u);
  absl::StatusOr<std::shared_ptr<Module>> m = Module::OpenFile(exe);
  ASSERT_TRUE(m.ok());
  for (auto [start, offset] : segments) {
    absl::StatusOr<uint64_t> bias = (*m)->LoadBias(start, offset);
    ASSERT_TRUE(bias.ok()) << bias.status();
    EXPECT_EQ(*bias, MainProgramBias()) << absl::StrFormat("0x%x@0x%x", start, offset);
  }
}

TEST(ModuleTest, RowAtFunctionEntry) {
  absl::StatusOr<std::shared_ptr<Module>> m = Module::OpenFile(SelfExe());
  ASSERT_TRUE(m.ok());
  uint64_t file_pc = reinterpret_cast<uintptr_t>(&ModuleTestFunction) - MainProgramBias();
  absl::StatusOr<ModuleRow> r = (*m)->FindRow(Ip(file_pc));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->method, Method::kEhFrame);
  // x86_64 psABI: at a function's first instruction CFA = rsp + 8 and the
  // return address is at CFA - 8.
  EXPECT_EQ(r->row.cfa.kind, CfaRule::Kind::kRegOffset);
  EXPECT_EQ(r->row.cfa.reg, 7);
  EXPECT_EQ(r->row.cfa.offset, 8);
  EXPECT_EQ(r->row.regs[16].kind, RegisterRule::Kind::kOffset);
  EXPECT_EQ(r->row.regs[16].value, -8);
  EXPECT_LE(r->row.pc_lo, file_pc);
  EXPECT_GT(r->row.pc_hi, file_pc);
  // Cached: the same answer again.
  absl::StatusOr<ModuleRow> again = (*m)->FindRow(Ip(file_pc));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->row.cfa, r->row.cfa);
}

// The value of symbol `name` in `path`'s .symtab, or nullopt.
std::optional<uint64_t> SymbolValue(const std::string& path, absl::string_view name) {
  elf_version(EV_CURRENT);
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::optional<uint64_t> out;
  Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr && !out;
       scn = elf_nextscn(elf, scn)) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr || shdr.sh_type != SHT_SYMTAB) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    for (size_t i = 0; data != nullptr && shdr.sh_entsize != 0 &&
                       i < shdr.sh_size / shdr.sh_entsize;
         ++i) {
      GElf_Sym sym;
      if (gelf_getsym(data, static_cast<int>(i), &sym) == nullptr) continue;
      const char* n = elf_strptr(elf, shdr.sh_link, sym.st_name);
      if (n != nullptr && name == n) out = sym.st_value;
    }
  }
  elf_end(elf);
  close(fd);
  return out;
}

// An x32 file (ELFCLASS32, EM_X86_64) is an x86_64 module, as live and core
// targets decide (arch::ArchFromElfMachine), with 4-byte CFI pointers.
TEST(ModuleTest, OpensX32Modules) {
  const std::string path = harness::RunfilesRoot() + "/unwinder/testdata/libx32.so";
  absl::StatusOr<std::shared_ptr<Module>> m = Module::OpenFile(path);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ((*m)->arch(), arch::Arch::kX86_64);
  EXPECT_FALSE((*m)->build_id().empty());
  EXPECT_TRUE((*m)->has_eh_frame_hdr());
  for (absl::string_view fn : {"x32_leaf", "x32_caller"}) {
    std::optional<uint64_t> entry = SymbolValue(path, fn);
    ASSERT_TRUE(entry.has_value()) << fn;
    absl::StatusOr<ModuleRow> r = (*m)->FindRow(Ip(*entry), SourcePolicy());
    ASSERT_TRUE(r.ok()) << fn << ": " << r.status();
    EXPECT_EQ(r->method, Method::kEhFrame);
    EXPECT_EQ(r->row.pc_lo, *entry) << fn;  // the FDE's 4-byte pc_begin
    // x86_64 code: CFA = rsp + 8, return address (8 bytes) at CFA - 8.
    EXPECT_EQ(r->row.cfa.reg, 7);
    EXPECT_EQ(r->row.cfa.offset, 8);
    EXPECT_EQ(r->row.regs[16].value, -8);
  }
}

TEST(ModuleTest, NoRowOutsideCode) {
  absl::StatusOr<std::shared_ptr<Module>> m = Module::OpenFile(SelfExe());
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE(absl::IsNotFound((*m)->FindRow(Ip(0x10)).status()));
}

// A PC in the module's code that no FDE covers (crti's _init: .init has no
// CFI): with "fp" in the policy, the frame-pointer rule (its stack checks
// decide, fp/frame_pointer.h); without it, no row. Outside every
// executable segment, none either way.
TEST(ModuleTest, FramePointerForCodeNoTableDescribes) {
  const std::string exe = SelfExe();
  absl::StatusOr<std::shared_ptr<Module>> m = Module::OpenFile(exe);
  ASSERT_TRUE(m.ok()) << m.status();
  // .init's address, from the section headers.
  elf_version(EV_CURRENT);
  int fd = open(exe.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
  ASSERT_NE(elf, nullptr);
  size_t shstrndx = 0;
  ASSERT_EQ(elf_getshdrstrndx(elf, &shstrndx), 0);
  uint64_t init = 0;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) == nullptr) continue;
    const char* name = elf_strptr(elf, shstrndx, sh.sh_name);
    if (name != nullptr && std::strcmp(name, ".init") == 0) init = sh.sh_addr;
  }
  elf_end(elf);
  close(fd);
  ASSERT_NE(init, 0u);
  absl::StatusOr<ModuleRow> with_fp =
      (*m)->FindRow(Ip(init + 4), *SourcePolicy::Parse("eh_frame,debug_frame,fp"));
  ASSERT_TRUE(with_fp.ok()) << with_fp.status();
  EXPECT_EQ(with_fp->method, Method::kFramePointer);
  EXPECT_TRUE(absl::IsNotFound(
      (*m)->FindRow(Ip(init + 4), *SourcePolicy::Parse("eh_frame,debug_frame")).status()));
  EXPECT_TRUE(absl::IsNotFound(
      (*m)->FindRow(Ip(0x10), *SourcePolicy::Parse("eh_frame,fp")).status()));
}

TEST(ModuleTest, Errors) {
  EXPECT_TRUE(absl::IsNotFound(Module::OpenFile("/nonexistent/lib.so").status()));
  EXPECT_FALSE(Module::OpenFile("/proc/self").ok());
  EXPECT_TRUE(absl::IsDataLoss(
      Module::FromImage(std::vector<uint8_t>(100, 0x41), "junk").status()));
  EXPECT_TRUE(absl::IsDataLoss(Module::FromImage({}, "empty").status()));
  // A real ELF header cut short: libelf must refuse it, not read past it.
  std::ifstream f(SelfExe(), std::ios::binary);
  std::vector<uint8_t> head(40);
  f.read(reinterpret_cast<char*>(head.data()), head.size());
  EXPECT_FALSE(Module::FromImage(head, "truncated").ok());
}

TEST(ModuleTest, TruncatedImagesNeverCrash) {
  std::ifstream f(SelfExe(), std::ios::binary);
  std::vector<uint8_t> whole((std::istreambuf_iterator<char>(f)),
                             std::istreambuf_iterator<char>());
  ASSERT_GT(whole.size(), 4096u);
  uint64_t file_pc = reinterpret_cast<uintptr_t>(&ModuleTestFunction) - MainProgramBias();
  // Every cut either fails to open or answers lookups without crashing.
  for (size_t cut = 64; cut < whole.size(); cut += whole.size() / 97) {
    std::vector<uint8_t> part(whole.begin(), whole.begin() + cut);
    absl::StatusOr<std::shared_ptr<Module>> m = Module::FromImage(part, "cut");
    if (m.ok()) (void)(*m)->FindRow(Ip(file_pc));
  }
}

TEST(ModuleCacheTest, SharesAndEvicts) {
  ModuleCache cache(/*max_bytes=*/uint64_t{1} << 40);
  absl::StatusOr<std::shared_ptr<Module>> a = cache.GetFile(SelfExe());
  absl::StatusOr<std::shared_ptr<Module>> b = cache.GetFile("/proc/self/exe");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->get(), b->get());  // one file, two paths: one module
  EXPECT_EQ(cache.stats().hits, 1u);

  ModuleCache tiny(/*max_bytes=*/1);
  absl::StatusOr<std::shared_ptr<Module>> c = tiny.GetFile(SelfExe());
  ASSERT_TRUE(c.ok());  // still usable, just not kept
  EXPECT_EQ(tiny.stats().modules, 0u);
  EXPECT_EQ(tiny.stats().bytes, 0u);
}

// A copy of a cached file (another inode, the same build-id) is the same
// module: its rows are shared.
TEST(ModuleCacheTest, CopiesShareOneModuleByBuildId) {
  std::string copy = ::testing::TempDir() + "/module_test_copy";
  {
    std::ifstream in(SelfExe(), std::ios::binary);
    std::ofstream out(copy, std::ios::binary | std::ios::trunc);
    out << in.rdbuf();
  }
  ModuleCache cache;
  absl::StatusOr<std::shared_ptr<Module>> a = cache.GetFile(SelfExe());
  absl::StatusOr<std::shared_ptr<Module>> b = cache.GetFile(copy);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->get(), b->get());
  EXPECT_EQ(cache.FindByBuildId((*a)->build_id()).get(), a->get());
  EXPECT_EQ(cache.FindByBuildId("00"), nullptr);
  EXPECT_EQ(cache.stats().bytes, (*a)->image_size());  // counted once
}

// A module opened with a debug lookup is keyed by it too; FindAnyByBuildId
// finds it whatever the lookup, FindByBuildId only without one.
TEST(ModuleCacheTest, FindAnyByBuildIdWhateverTheDebugLookup) {
  ModuleCache cache;
  locate::LocateOptions options;
  options.debug_dirs = {::testing::TempDir()};
  const ModuleCache::DebugLookup debug{&options, SelfExe()};
  absl::StatusOr<std::shared_ptr<Module>> m = cache.GetFile(SelfExe(), &debug);
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_FALSE((*m)->build_id().empty());
  EXPECT_EQ(cache.FindByBuildId((*m)->build_id()), nullptr);
  EXPECT_EQ(cache.FindAnyByBuildId((*m)->build_id()).get(), m->get());
  EXPECT_EQ(cache.FindAnyByBuildId("00"), nullptr);
  EXPECT_EQ(cache.FindAnyByBuildId(""), nullptr);
}

TEST(ModuleCacheTest, EvictionKeepsModulesOthersStillReference) {
  std::string copy = ::testing::TempDir() + "/module_test_copy2";
  {
    std::ifstream in(SelfExe(), std::ios::binary);
    std::ofstream out(copy, std::ios::binary | std::ios::trunc);
    out << in.rdbuf();
  }
  const std::string libc_path = "/usr/lib/x86_64-linux-gnu/libc.so.6";
  ModuleCache probe;
  uint64_t size = (*probe.GetFile(SelfExe()))->image_size();
  uint64_t libc_size = (*probe.GetFile(libc_path))->image_size();
  // Room for either image but not both.
  ModuleCache cache(std::max(size, libc_size) + std::min(size, libc_size) / 2);
  ASSERT_TRUE(cache.GetFile(SelfExe()).ok());
  ASSERT_TRUE(cache.GetFile(copy).ok());
  EXPECT_EQ(cache.stats().modules, 2u);
  EXPECT_EQ(cache.stats().bytes, size);
  absl::StatusOr<std::shared_ptr<Module>> libc = cache.GetFile(libc_path);
  ASSERT_TRUE(libc.ok());
  // Both keys of the first image had to go before its bytes came back.
  EXPECT_EQ(cache.stats().bytes, libc_size);
  EXPECT_EQ(cache.stats().modules, 1u);
  EXPECT_EQ(cache.FindByBuildId((*probe.GetFile(SelfExe()))->build_id()), nullptr);
  EXPECT_EQ(cache.stats().evictions, 2u);
}

// The rows cached across every module stay under the cache's row budget;
// when it is spent, every module starts afresh, so the module in use is
// never starved by the rows of another.
TEST(ModuleCacheTest, RowCachesShareOneBudget) {
  const uint64_t entry = Module::kRowCacheEntryBytes;
  ModuleCache cache(uint64_t{1} << 40, /*max_row_bytes=*/3 * entry);
  absl::StatusOr<std::shared_ptr<Module>> self = cache.GetFile(SelfExe());
  absl::StatusOr<std::shared_ptr<Module>> libc =
      cache.GetFile("/usr/lib/x86_64-linux-gnu/libc.so.6");
  ASSERT_TRUE(self.ok() && libc.ok());
  const uint64_t pc = reinterpret_cast<uintptr_t>(&ModuleTestFunction) - MainProgramBias();
  const std::optional<std::pair<uint64_t, uint64_t>> fn = (*libc)->FunctionBounds(0x30000);
  ASSERT_TRUE(fn.has_value());
  // Three rows of ours fill the budget.
  for (uint64_t i = 0; i < 3; ++i) ASSERT_TRUE((*self)->FindRow(Ip(pc + i)).ok());
  EXPECT_EQ(cache.stats().row_bytes, 3 * entry);
  EXPECT_EQ((*self)->row_cache_bytes(), 3 * entry);
  // libc's first row does not fit: served uncached, and everyone drops theirs.
  ASSERT_TRUE((*libc)->FindRow(Ip(fn->first)).ok());
  EXPECT_EQ(cache.stats().row_bytes, 0u);
  EXPECT_EQ((*self)->row_cache_bytes(), 0u);
  // So libc's next rows are cached.
  ASSERT_TRUE((*libc)->FindRow(Ip(fn->first)).ok());
  ASSERT_TRUE((*libc)->FindRow(Ip(fn->first + 1)).ok());
  EXPECT_EQ((*libc)->row_cache_bytes(), 2 * entry);
  EXPECT_EQ(cache.stats().row_bytes, 2 * entry);
  // A module that goes away gives its bytes back.
  ModuleCache small(/*max_bytes=*/1, /*max_row_bytes=*/3 * entry);
  {
    absl::StatusOr<std::shared_ptr<Module>> unkept = small.GetFile(SelfExe());
    ASSERT_TRUE(unkept.ok());
    ASSERT_TRUE((*unkept)->FindRow(Ip(pc)).ok());
    EXPECT_EQ(small.stats().row_bytes, entry);
  }
  EXPECT_EQ(small.stats().row_bytes, 0u);
}

// A module cached for one reader does not answer for another who may see
// the file's name but not read it (the server unwinds each core with its
// client's filesystem identity).
TEST(ModuleCacheTest, ACachedModuleIsOnlyForThoseWhoMayReadTheFile) {
  char dir_template[] = "/tmp/module_cache_test_XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  ASSERT_EQ(chmod(dir.c_str(), 0755), 0);
  const std::string secret = dir + "/secret";
  {
    std::ifstream in(SelfExe(), std::ios::binary);
    std::ofstream out(secret, std::ios::binary | std::ios::trunc);
    out << in.rdbuf();
  }
  ASSERT_EQ(chmod(secret.c_str(), 0600), 0);
  ModuleCache cache;
  ASSERT_TRUE(cache.GetFile(secret).ok());  // as root: opened and cached

  absl::StatusOr<std::shared_ptr<Module>> as_nobody = absl::UnknownError("not run");
  std::thread t([&] {
    // setfsuid is per thread: only this one reads files as uid 65534.
    setfsgid(65534);
    setfsuid(65534);
    struct stat st;
    ASSERT_EQ(stat(secret.c_str(), &st), 0);  // the name is visible
    as_nobody = cache.GetFile(secret);
  });
  t.join();
  EXPECT_TRUE(absl::IsPermissionDenied(as_nobody.status())) << as_nobody.status();
  EXPECT_TRUE(cache.GetFile(secret).ok());
  unlink(secret.c_str());
  rmdir(dir.c_str());
}

TEST(ModuleCacheTest, ARowCacheBudgetOfZeroCachesNothing) {
  ModuleCache cache(uint64_t{1} << 40, /*max_row_bytes=*/0);
  absl::StatusOr<std::shared_ptr<Module>> self = cache.GetFile(SelfExe());
  ASSERT_TRUE(self.ok());
  const uint64_t pc = reinterpret_cast<uintptr_t>(&ModuleTestFunction) - MainProgramBias();
  absl::StatusOr<ModuleRow> a = (*self)->FindRow(Ip(pc));
  absl::StatusOr<ModuleRow> b = (*self)->FindRow(Ip(pc));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->row.cfa, b->row.cfa);
  EXPECT_EQ(cache.stats().row_bytes, 0u);
}

}  // namespace
}  // namespace unwindd::unwinder
