// Google Benchmarks of the unwinder (issue 7), run with
//   bazel run -c opt //unwinder:unwind_benchmark
//
//  BM_WarmUnwind    captured samples (registers + stack copy + the real
//                   module files) of the fixture programs, unwound again and
//                   again with warm module and row caches: ns per frame.
//  BM_ColdModule    a module never seen: open the ELF, find its tables and
//                   the row for one PC — the demo binary, libc, and the
//                   largest shared library on the machine.
//  BM_LiveStack/0   one stack of an already-stopped thread of a real process
//  BM_LiveStack/46  (the recursion fixture's 306-frame thread, and its
//                   46-frame one), registers and stack read anew each time:
//                   µs per stack.
// Sizes of the module, row and step caches are reported as counters.
#include <elf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "benchmark/benchmark.h"
#include "memory/factories.h"
#include "proc/live_target.h"
#include "proc/snapshot_target.h"
#include "testdata/harness/subprocess.h"
#include "testdata/harness/tools.h"
#include "unwinder/module_cache.h"
#include "unwinder/testing/sample_capture.h"
#include "unwinder/unwinder.h"

namespace unwindd::unwinder {
namespace {

constexpr const char* kFixtures[] = {"demo", "threads_c_O2_nofp_pie",
                                     "recursion_O2_nofp_pie"};

// Samples of every thread of every fixture, captured once per run.
const std::vector<proc::Snapshot>& Samples() {
  static const std::vector<proc::Snapshot>* samples = [] {
    auto* out = new std::vector<proc::Snapshot>;
    for (const char* name : kFixtures) {
      absl::StatusOr<harness::RunningProgram> p =
          harness::StartProgram(harness::FixturePath(name));
      if (!p.ok()) continue;
      absl::StatusOr<std::vector<proc::Snapshot>> s =
          testing::CaptureSamples(p->pid(), 512 << 10);
      if (s.ok()) out->insert(out->end(), s->begin(), s->end());
    }
    return out;
  }();
  return *samples;
}

struct PreparedSample {
  std::unique_ptr<proc::Target> target;
  AddressSpace* space;  // shared by the samples of one process
  arch::RegisterSet regs;
};

void BM_WarmUnwind(benchmark::State& state) {
  ModuleCache cache;
  // As a snapshot stream keeps them: one address space per process (its
  // modules and step cache), each sample unwound over its own stack copy.
  // Each space is built over the first sample of its process, which the
  // prepared samples keep alive (so they are declared first, destroyed last).
  std::vector<PreparedSample> prepared;
  std::vector<std::unique_ptr<AddressSpace>> spaces;
  absl::flat_hash_map<pid_t, AddressSpace*> space_of;
  for (const proc::Snapshot& s : Samples()) {
    absl::StatusOr<std::unique_ptr<proc::Target>> t = proc::CreateSnapshotTarget(s, nullptr);
    if (!t.ok()) continue;
    AddressSpace*& space = space_of[s.pid];
    if (space == nullptr) {
      spaces.push_back(std::make_unique<AddressSpace>(**t, cache));
      space = spaces.back().get();
    }
    prepared.push_back(PreparedSample{*std::move(t), space, s.registers});
  }
  if (prepared.empty()) {
    state.SkipWithError("no samples captured");
    return;
  }
  UnwindOptions options;
  options.max_frames = 4096;
  int64_t frames = 0;
  for (auto _ : state) {
    for (PreparedSample& p : prepared) {
      ThreadStack stack = UnwindRegisters(*p.space, p.target->memory(), p.regs, options);
      frames += stack.frames.size();
      benchmark::DoNotOptimize(stack);
    }
  }
  size_t step_cache_bytes = 0;
  for (const auto& space : spaces) step_cache_bytes += space->step_cache().bytes();
  state.counters["frames"] = benchmark::Counter(frames);
  state.counters["ns_per_frame"] = benchmark::Counter(
      frames, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["samples"] = prepared.size();
  state.counters["processes"] = spaces.size();
  // Memory: the mapped images of the cached modules, the heap their row
  // caches hold (bounded together by ModuleCache's row budget), and the
  // fixed-size step caches of the address spaces.
  state.counters["module_cache_bytes"] = cache.stats().bytes;
  state.counters["row_cache_bytes"] = cache.stats().row_bytes;
  state.counters["step_cache_bytes"] = step_cache_bytes;
}
BENCHMARK(BM_WarmUnwind)->Unit(benchmark::kMicrosecond);

// A PC in the middle of the first executable segment: most of .text is
// covered by FDEs, and the lookup is exercised either way.
uint64_t MidTextAddress(const std::string& path) {
  elf_version(EV_CURRENT);
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
  uint64_t pc = 0;
  size_t n = 0;
  elf_getphdrnum(elf, &n);
  for (size_t i = 0; i < n && pc == 0; ++i) {
    GElf_Phdr ph;
    if (gelf_getphdr(elf, i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X)) {
      pc = ph.p_vaddr + ph.p_memsz / 2;
    }
  }
  elf_end(elf);
  close(fd);
  return pc;
}

std::string LargestSharedLibrary() {
  std::string best;
  uintmax_t best_size = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/usr/lib/x86_64-linux-gnu", ec)) {
    std::string name = e.path().filename();
    if (name.find(".so") == std::string::npos || !e.is_regular_file(ec)) continue;
    uintmax_t size = e.file_size(ec);
    if (!ec && size > best_size) {
      best_size = size;
      best = e.path();
    }
  }
  return best;
}

void BM_ColdModule(benchmark::State& state, std::string path) {
  if (path.empty() || access(path.c_str(), R_OK) != 0) {
    state.SkipWithError("no such file");
    return;
  }
  uint64_t pc = MidTextAddress(path);
  size_t eh_frame_size = 0;
  bool found = false;
  for (auto _ : state) {
    // Not through the cache: every iteration opens the file from scratch.
    absl::StatusOr<std::shared_ptr<Module>> m = Module::OpenFile(path);
    if (!m.ok()) {
      state.SkipWithError(std::string(m.status().message()).c_str());
      return;
    }
    absl::StatusOr<ModuleRow> row = (*m)->FindRow(arch::FrameAddress::InstructionPointer(pc));
    found = row.ok();
    eh_frame_size = (*m)->eh_frame_size();
    benchmark::DoNotOptimize(row);
  }
  state.SetLabel(path + (found ? "" : " (pc not covered)"));
  state.counters["file_MB"] = std::filesystem::file_size(path) / 1e6;
  state.counters["eh_frame_KB"] = eh_frame_size / 1e3;
}
BENCHMARK_CAPTURE(BM_ColdModule, demo, harness::FixturePath("demo"))
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_ColdModule, libc, std::string("/usr/lib/x86_64-linux-gnu/libc.so.6"))
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_ColdModule, largest_library, LargestSharedLibrary())
    ->Unit(benchmark::kMicrosecond);

// state.range(0): the thread to unwind, by depth: 0 the deepest (306
// frames), else the one whose depth is nearest to range(0) (46: the stack
// issue 7's live target is stated for).
void BM_LiveStack(benchmark::State& state) {
  absl::StatusOr<harness::RunningProgram> p =
      harness::StartProgram(harness::FixturePath("recursion_O2_nofp_pie"));
  if (!p.ok()) {
    state.SkipWithError("cannot start the fixture");
    return;
  }
  absl::StatusOr<std::unique_ptr<proc::Target>> target = proc::AttachLive(p->pid(), {});
  if (!target.ok()) {
    state.SkipWithError("cannot attach");
    return;
  }
  ModuleCache cache;
  AddressSpace space(**target, cache);
  UnwindOptions options;
  options.max_frames = 4096;
  pid_t tid = 0;
  int64_t best = -1;
  for (pid_t t : (*target)->Threads()) {
    ThreadStack s = UnwindRegisters(space, (*target)->memory(),
                                    *(*target)->InitialRegisters(t), options);
    const int64_t n = s.frames.size();
    const int64_t score = state.range(0) == 0 ? n : -std::abs(n - state.range(0));
    if (best == -1 || score > best) {
      best = score;
      tid = t;
    }
  }
  std::unique_ptr<memory::Memory> process = memory::CreateProcessMemory(p->pid());
  int64_t frames = 0;
  for (auto _ : state) {
    // Registers and stack are read anew (the stack in bulk, by
    // UnwindRegisters); modules and the step cache stay warm.
    absl::StatusOr<arch::RegisterSet> regs = (*target)->InitialRegisters(tid);
    ThreadStack s = UnwindRegisters(space, *process, *regs, options);
    frames += s.frames.size();
  }
  state.counters["frames_per_stack"] = static_cast<double>(frames) / state.iterations();
  state.counters["ns_per_frame"] = benchmark::Counter(
      frames, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_LiveStack)->Arg(0)->Arg(46)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace unwindd::unwinder
