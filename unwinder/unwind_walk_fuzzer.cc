// libFuzzer target: the whole walk (unwinder::UnwindTarget) from fuzzed
// registers and a fuzzed stack, over real modules: the address space of
// the committed core testdata/core/fixture (its crasher executable, libc and
// ld.so from fixture/sysroot, its vDSO) as a profiler's sample
// (proc::SnapshotTarget). Every source order of --sources is exercised, and
// every frame's row comes from real .eh_frame, applied to hostile values.
// Each input is also walked as two samples of one thread, the second with
// a few words changed, to check that a walk that takes its rest from the
// last one (walk_replay.h) gives exactly what one that steps through gives
// (CheckReplay).
//
// Input layout (tools/fuzz/fuzz_input.h; missing bytes are zeros):
//   u8  policy    which --sources order (see Policy)
//   u8  pc_mode   bit 0: the PC is the start of executable mapping `pick`
//                 plus `offset` (below), else the raw rip value
//   u64 valid-register mask, then 17 u64 x86_64 registers (DWARF order)
//   u8  pick, u32 offset
//   u64 stack_address
//   ... the stack copy (at most kMaxStack bytes)
//
// Seeds: UNWINDD_WRITE_WALK_SEEDS=DIR bazel-bin/unwinder/unwind_walk_fuzzer
// writes one input per thread of the core (its registers, 16 KiB of its
// stack) into DIR and exits (tools/fuzz/make_seeds.sh).
#include <fcntl.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "arch/arch.h"
#include "arch/register_set.h"
#include "memory/scoped_fd.h"
#include "proc/core_target.h"
#include "proc/snapshot_target.h"
#include "tools/fuzz/fuzz_input.h"
#include "tools/fuzz/runfiles.h"
#include "unwinder/address_space.h"
#include "unwinder/module_cache.h"
#include "unwinder/source_policy.h"
#include "unwinder/testing/describe_walk.h"
#include "unwinder/unwinder.h"

namespace unwindd::unwinder {
namespace {

constexpr size_t kMaxStack = 64 << 10;
constexpr size_t kSeedStack = 16 << 10;
constexpr int kX86_64Regs = 17;

struct Fixture {
  std::unique_ptr<proc::SnapshotTarget> target;
  std::vector<std::pair<uint64_t, uint64_t>> code;  // executable mappings
  // Smaller than the default: a fuzzed stack that overlays the vDSO's
  // addresses makes its image (read from the sample) a new module each
  // time, and millions of runs would otherwise fill the default budget
  // (and libFuzzer's 2 GiB) with them.
  ModuleCache cache{uint64_t{64} << 20};
};
Fixture* fixture = nullptr;

SourcePolicy Policy(uint8_t bits) {
  switch (bits % 6) {
    case 1:
      return SourcePolicy::Of({Source::kSframe, Source::kEhFrame});
    case 2:
      return SourcePolicy::Of({Source::kFramePointer, Source::kEhFrame});
    case 3:
      return SourcePolicy::Of({Source::kDebugFrame, Source::kFramePointer});
    case 4:
      return SourcePolicy::Of({Source::kFramePointer});
    default:
      return SourcePolicy();
  }
}

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "unwind_walk_fuzzer: %s\n", what.c_str());
  std::abort();
}

// The fixture core's mappings, each with its file (or, for the vDSO, its
// bytes from the core) as a sample would carry them.
std::unique_ptr<proc::CoreTarget> OpenFixture(const char* argv0,
                                              Fixture& f) {
  const std::string dir = fuzz::Runfile(argv0, "testdata/core/fixture");
  proc::CoreOptions options;
  options.lookup.exe = dir + "/crasher";
  options.lookup.sysroot = dir + "/sysroot";
  absl::StatusOr<std::unique_ptr<proc::CoreTarget>> core =
      proc::OpenCore(dir + "/core", options);
  if (!core.ok()) Die(core.status().ToString());
  std::vector<proc::SnapshotMapping> mappings;
  for (const proc::Mapping& m : (*core)->mappings()) {
    proc::SnapshotMapping sm{m, nullptr, nullptr, (*core)->RecordedBuildId(m)};
    for (const std::string& path : (*core)->FileCandidates(m)) {
      memory::ScopedFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
      if (fd.get() < 0) continue;
      absl::StatusOr<std::shared_ptr<const proc::SnapshotFile>> file =
          proc::SnapshotFile::FromFd(std::move(fd));
      if (file.ok()) sm.file = *file;
      break;
    }
    if (m.path == "[vdso]") {
      auto image = std::make_shared<std::vector<uint8_t>>(m.end - m.start);
      if ((*core)->memory().ReadFully(m.start, absl::MakeSpan(*image)).ok()) {
        sm.image = image;
      }
    }
    if (m.exec) f.code.emplace_back(m.start, m.end);
    mappings.push_back(std::move(sm));
  }
  if (f.code.empty()) Die("the fixture core maps no code");
  absl::StatusOr<std::unique_ptr<proc::SnapshotTarget>> t =
      proc::SnapshotTarget::Create(arch::Arch::kX86_64, 0, std::move(mappings));
  if (!t.ok()) Die(t.status().ToString());
  f.target = *std::move(t);
  return *std::move(core);
}

// One seed per thread of the core: its registers and stack, as Run reads them.
void WriteSeeds(proc::CoreTarget& core, const std::string& dir) {
  for (pid_t tid : core.Threads()) {
    absl::StatusOr<arch::RegisterSet> regs = core.InitialRegisters(tid);
    if (!regs.ok()) Die(regs.status().ToString());
    std::string seed;
    auto put = [&](uint64_t v, int bytes) {
      for (int i = 0; i < bytes; ++i) seed.push_back(static_cast<char>(v >> (8 * i)));
    };
    put(0, 1);  // default sources
    put(0, 1);  // raw pc
    uint64_t valid = 0;
    for (int r = 0; r < kX86_64Regs; ++r) {
      if (regs->Valid(r)) valid |= uint64_t{1} << r;
    }
    put(valid, 8);
    for (int r = 0; r < kX86_64Regs; ++r) put(regs->Get(r), 8);
    put(0, 1);
    put(0, 4);
    put(regs->sp(), 8);
    std::vector<uint8_t> stack(kSeedStack);
    const size_t n = core.memory().Read(regs->sp(), absl::MakeSpan(stack));
    seed.append(reinterpret_cast<const char*>(stack.data()), n);
    std::ofstream(absl::StrCat(dir, "/thread_", tid), std::ios::binary) << seed;
  }
}

// A walk that may take its rest from the thread's last one
// (walk_replay.h) must give what a walk that does not gives: the sample is
// walked once with a thread key (recorded), then a second sample, the same
// with a few of its stack words and maybe its frame pointer changed (words
// and values from the stack's own bytes), both ways.
void CheckReplay(const proc::SnapshotSample& first, const UnwindOptions& options) {
  UnwindOptions keyed = options;
  keyed.thread_key = 1;
  AddressSpace replaying(*fixture->target, fixture->cache);
  AddressSpace plain(*fixture->target, fixture->cache);
  auto walk = [](const proc::SnapshotSample& s, AddressSpace& space,
                 const UnwindOptions& o) -> std::optional<ThreadStack> {
    if (!fixture->target->SetSample(s).ok()) return std::nullopt;
    ProcessStacks out = UnwindTarget(*fixture->target, space, o);
    fixture->target->ClearSample();
    if (out.threads.empty()) return std::nullopt;
    return out.threads[0];
  };
  if (!walk(first, replaying, keyed).has_value()) return;
  std::vector<uint8_t> bytes(first.stack.begin(), first.stack.end());
  const size_t words = bytes.size() / 8;
  uint64_t seed = 0x9e3779b97f4a7c15ull;
  for (size_t i = 0; i < std::min<size_t>(bytes.size(), 64); ++i) {
    seed = (seed ^ bytes[i]) * 0x100000001b3ull;
  }
  proc::SnapshotSample second = first;
  for (int k = 0; words > 0 && k < static_cast<int>(seed % 4); ++k) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    const size_t at = (seed >> 20) % words;
    uint64_t v;
    std::memcpy(&v, &bytes[at * 8], 8);
    v ^= (seed >> 40) + 1;
    std::memcpy(&bytes[at * 8], &v, 8);
  }
  if ((seed >> 62) == 3 && second.registers.Valid(6)) {
    second.registers.Set(6, second.registers.Get(6) + 16);  // rbp
  }
  second.stack = bytes;
  const std::optional<ThreadStack> a = walk(second, replaying, keyed);
  const std::optional<ThreadStack> b = walk(second, plain, options);
  if (a.has_value() != b.has_value() ||
      (a.has_value() && testing::DescribeWalk(*a) != testing::DescribeWalk(*b))) {
    Die(absl::StrCat("a replayed walk differs: ", a ? testing::DescribeWalk(*a) : "none",
                     " against ", b ? testing::DescribeWalk(*b) : "none"));
  }
}

void Run(const uint8_t* data, size_t size) {
  fuzz::FuzzInput in(data, size);
  UnwindOptions options;
  options.sources = Policy(in.U8());
  options.max_frames = 256;
  const uint8_t pc_mode = in.U8();
  arch::RegisterSet regs(arch::Arch::kX86_64);
  const uint64_t valid = in.U64();
  for (int r = 0; r < kX86_64Regs; ++r) {
    const uint64_t v = in.U64();
    if ((valid >> r) & 1) regs.Set(r, v);
  }
  const auto& [start, end] = fixture->code[in.U8() % fixture->code.size()];
  const uint32_t offset = in.U32();
  if (pc_mode & 1) regs.set_pc(start + offset % (end - start));
  const uint64_t stack_address = in.U64();
  absl::Span<const uint8_t> stack = in.Bytes(kMaxStack);

  proc::SnapshotSample sample;
  sample.tid = 1;
  sample.registers = regs;
  sample.stack_address = stack_address;
  sample.stack = stack;
  if (!fixture->target->SetSample(sample).ok()) return;
  AddressSpace space(*fixture->target, fixture->cache);
  UnwindTarget(*fixture->target, space, options);
  fixture->target->ClearSample();
  CheckReplay(sample, options);
}

}  // namespace
}  // namespace unwindd::unwinder

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  using unwindd::unwinder::Fixture;
  auto* f = new Fixture();
  std::unique_ptr<unwindd::proc::CoreTarget> core =
      unwindd::unwinder::OpenFixture((*argv)[0], *f);
  if (const char* dir = std::getenv("UNWINDD_WRITE_WALK_SEEDS")) {
    unwindd::unwinder::WriteSeeds(*core, dir);
    std::exit(0);
  }
  unwindd::unwinder::fixture = f;
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  unwindd::unwinder::Run(data, size);
  return 0;
}
