// Factories for the Memory implementations. Callers see only `Memory`.
//
//   std::unique_ptr<Memory> m = CreateProcessMemory(pid);  // best available
//   std::unique_ptr<Memory> c = CreateCachedMemory(std::move(m));
#ifndef UNWINDD_MEMORY_FACTORIES_H_
#define UNWINDD_MEMORY_FACTORIES_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "memory/memory.h"

namespace unwindd::memory {

// Live process memory, choosing the first mechanism that works for `pid`:
// process_vm_readv, then pread on /proc/PID/mem, then PTRACE_PEEKDATA (which
// needs the caller to be the tracer of a stopped thread of `pid`).
std::unique_ptr<Memory> CreateProcessMemory(pid_t pid);
// The same, probing at `probes` (target addresses that should be readable,
// e.g. the starts of the first readable mappings) instead of reading
// /proc/PID/maps to find some.
std::unique_ptr<Memory> CreateProcessMemoryProbing(
    pid_t pid, const std::vector<uint64_t>& probes);

// Each mechanism alone (tests and benchmarks compare them).
std::unique_ptr<Memory> CreateProcessVmReadvMemory(pid_t pid);
std::unique_ptr<Memory> CreateProcMemFileMemory(pid_t pid);
std::unique_ptr<Memory> CreatePtracePeekMemory(pid_t pid);

// A copy of `bytes` that appears at target address `start`.
std::unique_ptr<Memory> CreateBufferMemory(uint64_t start,
                                           std::vector<uint8_t> bytes);

// Turns many small reads into few: reads whole pages of `inner` on first use
// and keeps up to `max_pages` of them (LRU-free: cleared when full). Meant for
// the lifetime of one unwind request on a stopped target.
std::unique_ptr<Memory> CreateCachedMemory(std::unique_ptr<Memory> inner,
                                           size_t max_pages = 1024);
// The same over memory the caller keeps owning (and keeps alive longer):
// one process memory per attach, a fresh cache per unwind.
std::unique_ptr<Memory> CreateCachedMemoryView(Memory& inner,
                                               size_t max_pages = 1024);

}  // namespace unwindd::memory

#endif  // UNWINDD_MEMORY_FACTORIES_H_
