// Modules whose CFI is not in the file: a split debug file, MiniDebugInfo,
// compressed .debug_frame; each must give the rows the unstripped binary
// gives, and the debug information is looked for once, only when needed.
#include "unwinder/debug_info.h"

#include <gelf.h>
#include <libelf.h>
#include <stdio.h>

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "testdata/debuginfo/servers.h"
#include "unwinder/module.h"
#include "unwinder/module_cache.h"
#include "unwinder/locate/testing/fixtures.h"

namespace unwindd::unwinder {
namespace {

using locate::testing::BasePath;
using locate::testing::kRecursion;
using locate::testing::kSignals;
using locate::testing::kThreads;
using locate::testing::VariantPath;

// Function entry points of the program's own code, from the unstripped
// .symtab: each is looked up as a return address one byte in, and as an
// instruction pointer at a few offsets.
std::vector<arch::FrameAddress> ProbeAddresses(const std::string& path) {
  std::vector<arch::FrameAddress> out;
  absl::StatusOr<locate::ElfFile> f = locate::ElfFile::Open(path);
  EXPECT_TRUE(f.ok());
  if (!f.ok()) return out;
  Elf_Scn* scn = f->FindSection(".symtab");
  GElf_Shdr shdr;
  if (scn == nullptr || gelf_getshdr(scn, &shdr) == nullptr) return out;
  Elf_Data* d = elf_getdata(scn, nullptr);
  for (size_t i = 0; d != nullptr && i < shdr.sh_size / shdr.sh_entsize; ++i) {
    GElf_Sym sym;
    if (gelf_getsym(d, static_cast<int>(i), &sym) == nullptr ||
        GELF_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_size < 4 || sym.st_value == 0) {
      continue;
    }
    out.push_back(arch::FrameAddress::ReturnAddress(sym.st_value + 1));
    out.push_back(arch::FrameAddress::InstructionPointer(sym.st_value));
    out.push_back(arch::FrameAddress::InstructionPointer(sym.st_value + sym.st_size / 2));
    out.push_back(arch::FrameAddress::InstructionPointer(sym.st_value + sym.st_size - 1));
  }
  return out;
}

bool SameExpr(absl::Span<const uint8_t> a, absl::Span<const uint8_t> b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end());
}

// Rows are equal up to where their expressions live (each file's own bytes).
void ExpectSameRow(const Row& a, const Row& b, const std::string& what) {
  EXPECT_EQ(a.pc_lo, b.pc_lo) << what;
  EXPECT_EQ(a.pc_hi, b.pc_hi) << what;
  EXPECT_EQ(a.cfa.kind, b.cfa.kind) << what;
  EXPECT_EQ(a.cfa.reg, b.cfa.reg) << what;
  EXPECT_EQ(a.cfa.offset, b.cfa.offset) << what;
  EXPECT_TRUE(SameExpr(a.cfa.expr, b.cfa.expr)) << what;
  for (size_t r = 0; r < a.regs.size(); ++r) {
    EXPECT_EQ(a.regs[r].kind, b.regs[r].kind) << what << " reg " << r;
    EXPECT_EQ(a.regs[r].value, b.regs[r].value) << what << " reg " << r;
    EXPECT_TRUE(SameExpr(a.regs[r].expr, b.regs[r].expr)) << what << " reg " << r;
  }
  EXPECT_EQ(a.return_address_register, b.return_address_register) << what;
  EXPECT_EQ(a.signal_frame, b.signal_frame) << what;
  EXPECT_EQ(a.args_size, b.args_size) << what;
}

locate::LocateOptions NoHostDirs() {
  locate::LocateOptions o;
  o.debug_dirs = {"/nonexistent-debug-dir"};
  return o;
}

// `module` gives, at every probe, the row and method the unstripped binary
// gives; returns how many rows came from .debug_frame.
int ExpectRowsLikeBase(Module& module, const std::string& name, const std::string& what) {
  absl::StatusOr<std::shared_ptr<Module>> base = Module::OpenFile(BasePath(name));
  EXPECT_TRUE(base.ok());
  int debug_frame_rows = 0;
  for (arch::FrameAddress at : ProbeAddresses(BasePath(name))) {
    absl::StatusOr<ModuleRow> want = (*base)->FindRow(at);
    absl::StatusOr<ModuleRow> got = module.FindRow(at);
    EXPECT_EQ(want.ok(), got.ok()) << what << " at 0x" << std::hex << at.address()
                                   << ": " << want.status() << " / " << got.status();
    if (!want.ok() || !got.ok()) continue;
    EXPECT_EQ(want->method, got->method) << what;
    ExpectSameRow(want->row, got->row, absl::StrCat(what, " at ", at.address()));
    debug_frame_rows += got->method == Method::kDebugFrame;
  }
  return debug_frame_rows;
}

class DebugInfoTest : public ::testing::TestWithParam<const char*> {};

TEST_P(DebugInfoTest, SplitDebugFileGivesTheRowsOfTheUnstrippedBinary) {
  const std::string name = GetParam();
  absl::StatusOr<std::shared_ptr<Module>> m = Module::OpenFile(VariantPath("split", name));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_FALSE((*m)->has_debug_frame());
  // Before any loader: the program's own functions have no CFI here (no
  // row, or the frame-pointer rule that code without CFI gets).
  std::vector<arch::FrameAddress> probes = ProbeAddresses(BasePath(name));
  ASSERT_FALSE(probes.empty());
  int missing = 0;
  for (arch::FrameAddress at : probes) {
    absl::StatusOr<ModuleRow> r = (*m)->FindRow(at);
    missing += !r.ok() || r->method == Method::kFramePointer;
  }
  EXPECT_GT(missing, 10);
  (*m)->set_debug_info_loader(
      MakeDebugInfoLoader(VariantPath("split", name), "/usr/bin/x", NoHostDirs()));
  EXPECT_GT(ExpectRowsLikeBase(**m, name, "split"), 10);
  std::optional<DebugInfo> d = (*m)->debug_info();
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->path, VariantPath("split", name) + ".debug");
  EXPECT_EQ(d->kind, "debug");
  EXPECT_EQ(d->origin, "debuglink");
  EXPECT_FALSE(d->fetched);
  EXPECT_TRUE((*m)->debug_info_status().ok());
}

TEST_P(DebugInfoTest, MiniDebugInfoGivesTheRowsOfTheUnstrippedBinary) {
  const std::string name = GetParam();
  absl::StatusOr<std::shared_ptr<Module>> m = Module::OpenFile(VariantPath("mini", name));
  ASSERT_TRUE(m.ok());
  (*m)->set_debug_info_loader(
      MakeDebugInfoLoader(VariantPath("mini", name), "/usr/bin/x", NoHostDirs()));
  EXPECT_GT(ExpectRowsLikeBase(**m, name, "mini"), 10);
  std::optional<DebugInfo> d = (*m)->debug_info();
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->kind, "minidebuginfo");
  EXPECT_TRUE(d->path.empty());
}

TEST_P(DebugInfoTest, CompressedDebugFrameInTheFileItself) {
  const std::string name = GetParam();
  for (const char* kind : {"zlib", "zstd", "zlib_gnu"}) {
    absl::StatusOr<std::shared_ptr<Module>> m = Module::OpenFile(VariantPath(kind, name));
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_TRUE((*m)->has_debug_frame()) << kind;
    EXPECT_GT(ExpectRowsLikeBase(**m, name, kind), 10) << kind;
    EXPECT_FALSE((*m)->debug_info().has_value());
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, DebugInfoTest,
                         ::testing::Values(kThreads, kSignals, kRecursion));

TEST(DebugInfoLoaderTest, RunsOnceAndOnlyWhenTheFileMissesAPc) {
  absl::StatusOr<std::shared_ptr<Module>> m =
      Module::OpenFile(VariantPath("split", kThreads));
  ASSERT_TRUE(m.ok());
  int runs = 0;
  (*m)->set_debug_info_loader([&runs]() -> absl::StatusOr<DebugInfo> {
    ++runs;
    return absl::NotFoundError("no debug information here");
  });
  std::vector<arch::FrameAddress> probes = ProbeAddresses(BasePath(kThreads));
  // Without debug_frame in the policy, never.
  absl::StatusOr<SourcePolicy> eh_only = SourcePolicy::Parse("eh_frame,fp");
  for (arch::FrameAddress at : probes) (void)(*m)->FindRow(at, *eh_only);
  EXPECT_EQ(runs, 0);
  for (arch::FrameAddress at : probes) (void)(*m)->FindRow(at);
  EXPECT_EQ(runs, 1);
  EXPECT_TRUE(absl::IsNotFound((*m)->debug_info_status()));
  EXPECT_FALSE((*m)->debug_info().has_value());

  // A file with its own .debug_frame never looks.
  absl::StatusOr<std::shared_ptr<Module>> own = Module::OpenFile(BasePath(kThreads));
  ASSERT_TRUE(own.ok());
  int own_runs = 0;
  (*own)->set_debug_info_loader([&own_runs]() -> absl::StatusOr<DebugInfo> {
    ++own_runs;
    return absl::NotFoundError("x");
  });
  for (arch::FrameAddress at : probes) (void)(*own)->FindRow(at);
  (void)(*own)->FindRow(arch::FrameAddress::ReturnAddress(0x7fffffff));
  EXPECT_EQ(own_runs, 0);
}

TEST(DebugInfoLoaderTest, ADebugFileForAnotherMachineOrWithoutCfiIsRefused) {
  absl::StatusOr<std::shared_ptr<Module>> m =
      Module::OpenFile(VariantPath("split", kThreads));
  ASSERT_TRUE(m.ok());
  // The stripped file itself: no .debug_frame.
  DebugInfo none{VariantPath("split", kThreads)};
  EXPECT_TRUE(absl::IsNotFound((*m)->AttachDebugInfo(none)));
  // An x32 object (EM_X86_64, ELFCLASS32): another class.
  DebugInfo x32{absl::StrCat(getenv("TEST_SRCDIR"), "/unwindd/unwinder/testdata/libx32.so")};
  absl::Status s = (*m)->AttachDebugInfo(x32);
  EXPECT_TRUE(absl::IsFailedPrecondition(s) || absl::IsNotFound(s)) << s;
  EXPECT_FALSE((*m)->debug_info().has_value());
}

TEST(ModuleCacheDebugTest, KeyedByTheLookupAndRecheckedOnEveryHit) {
  std::string dir = debuginfo_testing::NewTempDir("cache.");
  for (const std::string suffix : {"", ".debug"}) {
    absl::StatusOr<std::string> b =
        debuginfo_testing::ReadFile(VariantPath("split", kThreads) + suffix);
    ASSERT_TRUE(b.ok());
    ASSERT_TRUE(debuginfo_testing::WriteFile(
                    absl::StrCat(dir, "/", kThreads, suffix), *b)
                    .ok());
  }
  const std::string path = absl::StrCat(dir, "/", kThreads);
  locate::LocateOptions options = NoHostDirs();
  ModuleCache cache;
  ModuleCache::DebugLookup lookup{&options, "/usr/bin/threads"};
  absl::StatusOr<std::shared_ptr<Module>> plain = cache.GetFile(path);
  absl::StatusOr<std::shared_ptr<Module>> with = cache.GetFile(path, &lookup);
  ASSERT_TRUE(plain.ok() && with.ok());
  EXPECT_NE(*plain, *with);
  EXPECT_EQ(*cache.GetFile(path, &lookup), *with);
  EXPECT_GT(ExpectRowsLikeBase(**with, kThreads, "cached"), 10);
  ASSERT_TRUE((*with)->debug_info().has_value());
  // The debug file is gone (or unreadable to this caller): the cached
  // module with it is not handed out; the plain one is.
  ASSERT_EQ(rename((path + ".debug").c_str(), (path + ".gone").c_str()), 0);
  EXPECT_EQ(*cache.GetFile(path, &lookup), *plain);
  ASSERT_EQ(rename((path + ".gone").c_str(), (path + ".debug").c_str()), 0);
  EXPECT_EQ(*cache.GetFile(path, &lookup), *with);
}

}  // namespace
}  // namespace unwindd::unwinder
