// How fast jitdumps are parsed (ParseJitDump: header, every record's
// framing and body), and made into modules (JitRegions: one ELF image per
// piece of code), in MB/s of dump, on synthetic dumps shaped like node's
// --perf-prof ones: a CODE_UNWINDING_INFO before each CODE_LOAD (a real
// .eh_frame for one load in four, TurboFan's; the empty "use the frame
// pointer" table for the others), code sizes from 64 bytes to 4 KiB,
// names like "JS:*fib /tmp/x.js:3:14", a CODE_DEBUG_INFO now and then.
//
//   bazel run -c opt //proc/jit:jitdump_benchmark -- --benchmark_min_time=2
//
// Sizes: 16 MiB (fits the caches) and 256 MiB (does not).
#include <elf.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "proc/jit/jit_code.h"
#include "proc/jit/jitdump.h"

namespace unwindd::proc::jit {
namespace {

void U32(std::vector<uint8_t>& o, uint32_t v) { o.insert(o.end(), (uint8_t*)&v, (uint8_t*)&v + 4); }
void U64(std::vector<uint8_t>& o, uint64_t v) { o.insert(o.end(), (uint8_t*)&v, (uint8_t*)&v + 8); }

std::shared_ptr<const std::vector<uint8_t>> SyntheticDump(uint64_t bytes) {
  auto out = std::make_shared<std::vector<uint8_t>>();
  std::vector<uint8_t>& o = *out;
  o.reserve(bytes + 8192);
  U32(o, kJitDumpMagic), U32(o, 1), U32(o, 40), U32(o, EM_X86_64), U32(o, 0), U32(o, 4242);
  U64(o, 1), U64(o, 0);
  std::mt19937_64 rng(42);
  // A CIE and one FDE (the data's .eh_frame) and a 20-byte header.
  const std::vector<uint8_t> eh(56, 0x11), hdr(20, 0x22);
  uint64_t addr = 0x7f0000000000, index = 0, time = 1000;
  while (o.size() < bytes) {
    const uint64_t code_size = 64 + rng() % 4032;
    const bool cfi = rng() % 4 == 0;
    {
      const uint64_t data = cfi ? eh.size() + hdr.size() : 0;
      const uint64_t size = 16 + 24 + ((data + 7) & ~uint64_t{7});
      U32(o, 4), U32(o, size), U64(o, time++);
      U64(o, data), U64(o, cfi ? hdr.size() : 0), U64(o, cfi ? 1 : 0);
      if (cfi) {
        o.insert(o.end(), eh.begin(), eh.end());
        o.insert(o.end(), hdr.begin(), hdr.end());
      }
      o.resize(o.size() + (size - 40 - data), 0);
    }
    const std::string name = "JS:*fib" + std::to_string(index) + " /tmp/bench.js:3:14";
    const uint64_t size = 16 + 40 + name.size() + 1 + code_size;
    U32(o, 0), U32(o, size), U64(o, time++);
    U32(o, 4242), U32(o, 4243), U64(o, addr), U64(o, addr), U64(o, code_size), U64(o, index++);
    o.insert(o.end(), name.begin(), name.end());
    o.push_back(0);
    o.resize(o.size() + code_size, 0xcc);
    addr += (code_size + 63) & ~uint64_t{63};
    if (index % 16 == 0) {
      // CODE_DEBUG_INFO: code_addr, nr_entry, one entry {addr, line, discrim, "x.js"}.
      U32(o, 2), U32(o, 16 + 16 + 16 + 5), U64(o, time++);
      U64(o, addr), U64(o, 1), U64(o, addr), U32(o, 3), U32(o, 0);
      o.insert(o.end(), {'x', '.', 'j', 's', 0});
    }
  }
  return out;
}

void BM_ParseJitDump(benchmark::State& state) {
  const auto dump = SyntheticDump(uint64_t(state.range(0)) << 20);
  size_t codes = 0;
  for (auto _ : state) {
    absl::StatusOr<JitDump> d = ParseJitDump(dump);
    if (!d.ok() || d->truncated) state.SkipWithError("parse failed");
    codes = d->codes.size();
    benchmark::DoNotOptimize(d);
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * dump->size());
  state.counters["codes"] = codes;
}
BENCHMARK(BM_ParseJitDump)->Arg(16)->Arg(256)->Unit(benchmark::kMillisecond);

void BM_ParseAndBuildImages(benchmark::State& state) {
  const auto dump = SyntheticDump(uint64_t(state.range(0)) << 20);
  for (auto _ : state) {
    absl::StatusOr<JitDump> d = ParseJitDump(dump);
    absl::StatusOr<std::vector<JitRegion>> r = JitRegions(*d, "/tmp");
    if (!r.ok()) state.SkipWithError("regions failed");
    benchmark::DoNotOptimize(r);
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * dump->size());
}
BENCHMARK(BM_ParseAndBuildImages)->Arg(16)->Arg(256)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace unwindd::proc::jit
