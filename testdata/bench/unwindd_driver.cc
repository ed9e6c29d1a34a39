// Unwinds one stopped thread N times with unwindd's library, attached once
// like the peers. Each iteration reads the registers again (PTRACE_GETREGSET)
// and the stack again (UnwindRegisters reads it in bulk into a fresh
// window), so every unwind pays for its own target reads; modules, their
// rows and the step cache stay warm across iterations, as they do across
// requests in the service and for the peers' own caches.
#include <memory>

#include "memory/factories.h"
#include "proc/live_target.h"
#include "testdata/bench/driver_common.h"
#include "unwinder/module_cache.h"
#include "unwinder/unwinder.h"

int main(int argc, char** argv) {
  unwindd::bench::DriverArgs a = unwindd::bench::ParseDriverArgs(argc, argv);
  pid_t tids[] = {a.tid};
  absl::StatusOr<std::unique_ptr<unwindd::proc::Target>> target =
      unwindd::proc::AttachLive(a.pid, tids);
  if (!target.ok()) {
    std::fprintf(stderr, "unwindd: %s\n", target.status().ToString().c_str());
    return 1;
  }
  unwindd::unwinder::ModuleCache cache;
  unwindd::unwinder::AddressSpace space(**target, cache);
  unwindd::unwinder::UnwindOptions options;
  options.max_frames = 4096;
  std::unique_ptr<unwindd::memory::Memory> process =
      unwindd::memory::CreateProcessMemory(a.pid);
  std::vector<uint64_t> pcs;
  uint64_t start = unwindd::bench::NowNs();
  for (int i = 0; i < a.iterations; ++i) {
    absl::StatusOr<unwindd::arch::RegisterSet> regs = (*target)->InitialRegisters(a.tid);
    if (!regs.ok()) return 1;
    unwindd::unwinder::ThreadStack stack =
        unwindd::unwinder::UnwindRegisters(space, *process, *regs, options);
    pcs.clear();
    for (const unwindd::unwinder::Frame& f : stack.frames) pcs.push_back(f.pc);
    if (i == 0 && stack.stop != unwindd::unwinder::StopReason::kEndOfStack) {
      std::fprintf(stderr, "unwindd: stopped early: %s %s\n",
                   std::string(unwindd::unwinder::StopReasonName(stack.stop)).c_str(),
                   stack.stop_detail.c_str());
    }
  }
  uint64_t total = unwindd::bench::NowNs() - start;
  unwindd::bench::PrintResult(pcs, total, a.iterations);
  return 0;
}
