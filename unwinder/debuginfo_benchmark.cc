// What finding a module's files and debug information elsewhere costs, per
// module and per kind of lookup (issue 15), run with
//   bazel run -c opt //unwinder:debuginfo_benchmark
//
// Each iteration opens one module and looks up the row of a return address
// in the program's own code (which the file's own CFI does not cover, so
// the debug information is looked for), as the step loop's first frame in
// that module would:
//
//  BM_Module/<kind>/cold   a new ModuleCache every iteration: open the file,
//                          find the debug information, read its .debug_frame
//  BM_Module/<kind>/warm   one ModuleCache: the cached module (opened again
//                          as the caller), its cached row
//  kinds: own_cfi (the unstripped binary: the baseline), debuglink (split,
//         debug file beside it: CRC-32 of the debug file), build_id_dir,
//         minidebuginfo (xz), zlib / zstd / zlib_gnu (.debug_frame in the
//         file, compressed), no_debug_info (every local lookup misses)
//  BM_Debuginfod/cold      the executable and its debuginfo fetched from a
//                          real debuginfod on 127.0.0.1 into an empty cache
//  BM_Debuginfod/warm      the same from libdebuginfod's cache (a new
//                          ModuleCache each time: a new unwind process)
//
// The time a kind adds per module is its time minus own_cfi's.
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "testdata/debuginfo/servers.h"
#include "testdata/harness/tools.h"
#include "unwinder/locate/debuginfod.h"
#include "unwinder/locate/elf_file.h"
#include "unwinder/locate/locator.h"
#include "unwinder/module_cache.h"

namespace unwindd::unwinder {
namespace {

constexpr char kName[] = "threads_c_O2_nofp_pie_debugframe";

std::string Variant(const std::string& kind) {
  return absl::StrCat(harness::RunfilesRoot(), "/testdata/debuginfo/", kind, "/", kName);
}

void Copy(const std::string& from, const std::string& to) {
  absl::StatusOr<std::string> b = debuginfo_testing::ReadFile(from);
  if (!b.ok()) abort();
  if (!debuginfo_testing::MakeDirs(to.substr(0, to.rfind('/'))).ok()) abort();
  if (!debuginfo_testing::WriteFile(to, *b).ok()) abort();
}

// The layouts every benchmark uses, made once.
struct Setup {
  std::string dir;
  std::string build_id;
  uint64_t probe = 0;  // a return address in main
  std::string alone, by_id_main, by_id_dbg;
  std::unique_ptr<debuginfo_testing::DebuginfodServer> server;
  std::unique_ptr<locate::Debuginfod> debuginfod;
};

const Setup& Get() {
  static const Setup* s = [] {
    auto* s = new Setup;
    s->dir = debuginfo_testing::NewTempDir("debuginfo_benchmark.");
    absl::StatusOr<locate::ElfFile> f = locate::ElfFile::Open(Variant("split"));
    if (!f.ok()) abort();
    s->build_id = f->Facts()->build_id;
    // main's first byte + 1, from the unstripped binary's .symtab.
    absl::StatusOr<locate::ElfFile> base =
        locate::ElfFile::Open(harness::FixturePath(kName));
    if (!base.ok()) abort();
    Elf_Scn* scn = base->FindSection(".symtab");
    GElf_Shdr shdr;
    gelf_getshdr(scn, &shdr);
    Elf_Data* d = elf_getdata(scn, nullptr);
    for (size_t i = 0; i < shdr.sh_size / shdr.sh_entsize; ++i) {
      GElf_Sym sym;
      if (gelf_getsym(d, static_cast<int>(i), &sym) == nullptr) continue;
      const char* n = elf_strptr(base->elf(), shdr.sh_link, sym.st_name);
      if (n != nullptr && std::string(n) == "main") s->probe = sym.st_value + 1;
    }
    s->alone = s->dir + "/alone/" + kName;
    Copy(Variant("split"), s->alone);
    s->by_id_main = s->dir + "/byid/bin/" + kName;
    Copy(Variant("split"), s->by_id_main);
    s->by_id_dbg = s->dir + "/byid/dbg";
    Copy(Variant("split") + ".debug",
         absl::StrCat(s->by_id_dbg, "/.build-id/", s->build_id.substr(0, 2), "/",
                      s->build_id.substr(2), ".debug"));
    Copy(Variant("split"), s->dir + "/served/" + kName);
    Copy(Variant("split") + ".debug", s->dir + "/served/" + kName + ".debug");
    absl::StatusOr<std::unique_ptr<debuginfo_testing::DebuginfodServer>> server =
        debuginfo_testing::DebuginfodServer::Start(s->dir + "/served", 2);
    if (!server.ok()) abort();
    s->server = *std::move(server);
    absl::StatusOr<std::unique_ptr<locate::Debuginfod>> client =
        locate::Debuginfod::Create({s->server->url()});
    if (!client.ok() || *client == nullptr) abort();
    s->debuginfod = *std::move(client);
    return s;
  }();
  return *s;
}

struct Kind {
  std::string path;
  std::vector<std::string> debug_dirs;
};

Kind KindFor(int k) {
  const Setup& s = Get();
  const std::string none = s.dir + "/no-debug-dir";
  switch (k) {
    case 0: return {harness::FixturePath(kName), {none}};
    case 1: return {Variant("split"), {none}};
    case 2: return {s.by_id_main, {s.by_id_dbg}};
    case 3: return {Variant("mini"), {none}};
    case 4: return {Variant("zlib"), {none}};
    case 5: return {Variant("zstd"), {none}};
    case 6: return {Variant("zlib_gnu"), {none}};
    default: return {s.alone, {none}};
  }
}

constexpr const char* kKindNames[] = {"own_cfi", "debuglink", "build_id_dir",
                                      "minidebuginfo", "zlib", "zstd", "zlib_gnu",
                                      "no_debug_info"};

void OpenAndLookUp(ModuleCache& cache, const std::string& path,
                   const ModuleCache::DebugLookup& lookup, uint64_t probe,
                   benchmark::State& state) {
  absl::StatusOr<std::shared_ptr<Module>> m = cache.GetFile(path, &lookup);
  if (!m.ok()) {
    state.SkipWithError(std::string(m.status().message()).c_str());
    return;
  }
  absl::StatusOr<ModuleRow> row = (*m)->FindRow(arch::FrameAddress::ReturnAddress(probe));
  benchmark::DoNotOptimize(row);
}

void BM_Module(benchmark::State& state) {
  const Setup& s = Get();
  const Kind k = KindFor(static_cast<int>(state.range(0)));
  const bool warm = state.range(1) != 0;
  locate::LocateOptions options;
  options.debug_dirs = k.debug_dirs;
  ModuleCache::DebugLookup lookup{&options, k.path};
  ModuleCache shared;
  if (warm) OpenAndLookUp(shared, k.path, lookup, s.probe, state);
  for (auto _ : state) {
    if (warm) {
      OpenAndLookUp(shared, k.path, lookup, s.probe, state);
    } else {
      ModuleCache cache;
      OpenAndLookUp(cache, k.path, lookup, s.probe, state);
    }
  }
  state.SetLabel(absl::StrCat(kKindNames[state.range(0)], warm ? "/warm" : "/cold"));
}
BENCHMARK(BM_Module)
    ->ArgsProduct({{0, 1, 2, 3, 4, 5, 6, 7}, {0, 1}})
    ->Unit(benchmark::kMicrosecond);

// The main file missing here: LocateMainFile fetches it, the module's debug
// information comes from debuginfod too.
void BM_Debuginfod(benchmark::State& state) {
  const Setup& s = Get();
  const bool warm = state.range(0) != 0;
  locate::LocateOptions options;
  options.debug_dirs = {s.dir + "/no-debug-dir"};
  options.debuginfod = s.debuginfod.get();
  const std::string recorded = "/srv/gone/" + std::string(kName);
  ModuleCache::DebugLookup lookup{&options, recorded};
  const std::string warm_cache = s.dir + "/cache-warm";
  int round = 0;
  auto once = [&] {
    // Cold: an empty libdebuginfod cache every time; warm: one that has it.
    const std::string cache_dir =
        warm ? warm_cache : absl::StrCat(s.dir, "/cache-cold-", round++);
    setenv("DEBUGINFOD_CACHE_PATH", cache_dir.c_str(), 1);
    locate::MainFileQuery q{recorded, s.build_id, {{recorded, locate::Origin::kRecordedPath}}, 0};
    locate::LocateResult r = locate::LocateMainFile(q, options);
    if (!r.found) {
      state.SkipWithError("not fetched");
      return;
    }
    ModuleCache cache;
    OpenAndLookUp(cache, r.found->path, lookup, s.probe, state);
  };
  if (warm) once();
  for (auto _ : state) once();
  state.SetLabel(warm ? "warm (libdebuginfod cache)" : "cold (downloaded)");
}
BENCHMARK(BM_Debuginfod)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace unwindd::unwinder
