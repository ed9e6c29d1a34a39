#include "service/cli/symbols/symbolizer.h"

#include <gelf.h>
#include <libelf.h>

#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "testdata/debuginfo/servers.h"
#include "unwinder/locate/elf_file.h"
#include "unwinder/locate/testing/fixtures.h"

namespace unwindd::cli {
namespace {

using locate::testing::BasePath;
using locate::testing::kRecursion;
using locate::testing::kSignals;
using locate::testing::kThreads;
using locate::testing::VariantPath;

struct Func {
  std::string name;
  uint64_t size;
};

// The ground truth: FUNC symbols with a size, from the unstripped binary's
// own .symtab, one per address (aliases left out).
std::map<uint64_t, Func> FunctionsOf(const std::string& path) {
  std::map<uint64_t, Func> out;
  std::set<uint64_t> aliased;
  absl::StatusOr<locate::ElfFile> f = locate::ElfFile::Open(path);
  EXPECT_TRUE(f.ok()) << f.status();
  if (!f.ok()) return out;
  Elf_Scn* scn = f->FindSection(".symtab");
  EXPECT_NE(scn, nullptr);
  if (scn == nullptr) return out;
  GElf_Shdr shdr;
  gelf_getshdr(scn, &shdr);
  Elf_Data* d = elf_getdata(scn, nullptr);
  for (size_t i = 0; d != nullptr && i < shdr.sh_size / shdr.sh_entsize; ++i) {
    GElf_Sym sym;
    if (gelf_getsym(d, static_cast<int>(i), &sym) == nullptr) continue;
    if (GELF_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_size == 0 || sym.st_value == 0) {
      continue;
    }
    const char* n = elf_strptr(f->elf(), shdr.sh_link, sym.st_name);
    if (n == nullptr) continue;
    if (out.count(sym.st_value)) aliased.insert(sym.st_value);
    out[sym.st_value] = {n, sym.st_size};
  }
  for (uint64_t a : aliased) out.erase(a);
  return out;
}

// Every function of the program named at its entry (exact PC) and, as a
// return address, one past its last byte.
void CheckVariant(Symbolizer& sym, const ModuleFiles& files,
                  const std::map<uint64_t, Func>& funcs, const std::string& what) {
  int checked = 0;
  for (const auto& [addr, f] : funcs) {
    EXPECT_EQ(sym.Symbolize(files, addr, false), absl::StrCat(f.name, "+0x0"))
        << what << " at 0x" << std::hex << addr;
    if (f.size > 1) {
      EXPECT_EQ(sym.Symbolize(files, addr + 1, false), absl::StrCat(f.name, "+0x1"))
          << what << " " << f.name;
    }
    EXPECT_EQ(sym.Symbolize(files, addr + f.size, true),
              absl::StrFormat("%s+0x%x", f.name, f.size))
        << what << " return address at the end of " << f.name;
    ++checked;
  }
  EXPECT_GT(checked, 10) << what;
}

class SymbolizerTest : public ::testing::TestWithParam<const char*> {};

TEST_P(SymbolizerTest, EveryVariantNamesEveryFunction) {
  const std::string name = GetParam();
  std::map<uint64_t, Func> funcs = FunctionsOf(BasePath(name));
  ASSERT_FALSE(funcs.empty());
  Symbolizer::Options o;
  o.locate.debug_dirs = {"/nonexistent"};
  Symbolizer sym(o);
  CheckVariant(sym, {.file = BasePath(name)}, funcs, "unstripped");
  // Stripped: the debug file beside it is found through .gnu_debuglink.
  CheckVariant(sym, {.file = VariantPath("split", name)}, funcs, "split, debuglink");
  // ... or given, as the unwinder will have located it.
  CheckVariant(sym,
               {.file = VariantPath("split", name),
                .debug_file = VariantPath("split", name) + ".debug"},
               funcs, "split, debug file given");
  CheckVariant(sym, {.file = VariantPath("mini", name)}, funcs, "MiniDebugInfo");
  CheckVariant(sym, {.file = VariantPath("mini_symtab", name)}, funcs,
               "MiniDebugInfo, Fedora's");
  for (const char* c : {"zlib", "zstd", "zlib_gnu"}) {
    CheckVariant(sym, {.file = VariantPath(c, name)}, funcs, c);
  }
  absl::StatusOr<std::string> bytes = debuginfo_testing::ReadFile(BasePath(name));
  ASSERT_TRUE(bytes.ok());
  CheckVariant(sym,
               {.image = std::make_shared<const std::vector<uint8_t>>(bytes->begin(),
                                                                      bytes->end())},
               funcs, "image in memory");
}

INSTANTIATE_TEST_SUITE_P(Fixtures, SymbolizerTest,
                         ::testing::Values(kThreads, kSignals, kRecursion));

TEST(SymbolizerStrippedTest, WithoutAnyDebugInfoStaticFunctionsHaveNoName) {
  // The split binary alone, its debug file nowhere to be found.
  std::string dir = debuginfo_testing::NewTempDir("sym.");
  absl::StatusOr<std::string> b = debuginfo_testing::ReadFile(VariantPath("split", kThreads));
  ASSERT_TRUE(b.ok());
  ASSERT_TRUE(debuginfo_testing::WriteFile(dir + "/prog", *b).ok());
  std::map<uint64_t, Func> funcs = FunctionsOf(BasePath(kThreads));
  Symbolizer::Options o;
  o.locate.debug_dirs = {dir + "/none"};
  Symbolizer sym(o);
  int unnamed = 0;
  for (const auto& [addr, f] : funcs) {
    std::string s = sym.Symbolize({.file = dir + "/prog"}, addr, false);
    unnamed += s.rfind(f.name + "+", 0) != 0;
  }
  // main is not in .dynsym either; every static function loses its name.
  EXPECT_GE(unnamed, static_cast<int>(funcs.size()) - 2);
}

TEST(SymbolizerBoundsTest, ModulesAreClosedLeastRecentlyUsedFirst) {
  Symbolizer::Options o;
  o.max_modules = 2;
  o.max_cached_addresses = 4;
  o.locate.debug_dirs = {"/nonexistent"};
  Symbolizer sym(o);
  std::map<uint64_t, Func> funcs = FunctionsOf(BasePath(kThreads));
  uint64_t a = funcs.begin()->first;
  for (int round = 0; round < 3; ++round) {
    for (const char* n : {kThreads, kSignals, kRecursion}) {
      sym.Symbolize({.file = BasePath(n)}, a, false);
    }
  }
  // Three modules cycling through two slots: reopened every time.
  EXPECT_EQ(sym.modules_opened(), 9u);
  // Many addresses in one module: answers stay right past the cache bound.
  for (const auto& [addr, f] : funcs) {
    EXPECT_EQ(sym.Symbolize({.file = BasePath(kThreads)}, addr, false),
              absl::StrCat(f.name, "+0x0"));
  }
  EXPECT_EQ(sym.Symbolize({.file = "/nonexistent/file"}, 0x1000, false), "");
}

TEST(DemangleTest, CxxNamesAsEuStackPrintsThem) {
  EXPECT_EQ(Demangle("_ZN3foo3barEi"), "foo::bar(int)");
  EXPECT_EQ(Demangle("main"), "main");
  EXPECT_EQ(Demangle("_Znot_valid"), "_Znot_valid");
}

}  // namespace
}  // namespace unwindd::cli
