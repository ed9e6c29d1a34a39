// The step loop: from a thread's registers to its list of frames.
//
//   ModuleCache cache;
//   ProcessStacks stacks = UnwindTarget(target, cache, UnwindOptions{});
//   for (const ThreadStack& t : stacks.threads) ...
//
// Frame PCs are target addresses. Frame 0's pc is the thread's PC; a caller
// frame's pc is the return address as read, except after a signal frame,
// where it is the interrupted PC. Which address unwind info is looked up
// with (a return address minus one) is arch::FrameAddress's to say.
#ifndef UNWINDD_UNWINDER_UNWINDER_H_
#define UNWINDD_UNWINDER_UNWINDER_H_

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "arch/register_set.h"
#include "memory/memory.h"
#include "proc/target.h"
#include "unwinder/address_space.h"
#include "unwinder/frame.h"
#include "unwinder/method.h"
#include "unwinder/module_cache.h"
#include "unwinder/source_policy.h"

namespace unwindd::unwinder {

inline constexpr int kDefaultMaxFrames = 512;
inline constexpr int kMaxMaxFrames = 65536;

struct UnwindOptions {
  int max_frames = kDefaultMaxFrames;
  // Which unwind-info sources to use, in order (`--sources=LIST`; default
  // eh_frame, debug_frame, sframe, fp). See source_policy.h.
  SourcePolicy sources;
  // Checked between frames; when it becomes true the walk stops early.
  const std::atomic<bool>* cancel = nullptr;
  // Where else to find module files and their separate debug information
  // (unwinder/locate; not owned). Null: only the paths the target names.
  // Used by UnwindTarget(target, cache, ...), which builds the address
  // space; an AddressSpace built by the caller has its own.
  const locate::LocateOptions* locate = nullptr;
  // Non-zero: which thread of the address space this walk is (a profiler's
  // tid). The walk then takes the frames it shares with that thread's
  // recorded walk from it, when the return addresses (and any register
  // they depend on) read the same, and records itself when the record
  // serves poorly (walk_replay.h). Results are the same either way, and
  // whatever the key. Zero: neither.
  uint64_t thread_key = 0;
};

// The thread_key of thread `tid` (never zero, whatever the tid).
inline uint64_t ThreadKey(uint32_t tid) { return (uint64_t{1} << 32) | tid; }

struct ThreadStack {
  pid_t tid = 0;
  std::vector<Frame> frames;
  StopReason stop = StopReason::kEndOfStack;
  std::string stop_detail;  // the error behind a stop, for humans
  // The signal the thread was handling when the target was captured (a
  // core's NT_PRSTATUS / NT_SIGINFO).
  std::optional<proc::SignalInfo> signal;
  // One past the highest stack byte the walk read through its stack
  // window (0 if none): how much of a sample's stack copy it needed.
  uint64_t stack_high = 0;
};

struct ModuleInfo {
  std::string path;
  std::string build_id;
  uint64_t start = 0;
  uint64_t end = 0;
  uint64_t load_bias = 0;
  // Frames' rel_pc is meaningful: the bias is known, from the file or from
  // the ELF header in the target's memory.
  bool bias_known = true;
  // The file used, when it is not `path` (a core's file found through
  // --exe, --sysroot or --path-map).
  std::string file;
  // Why no file could be used ("" when one was): missing, unreadable, or
  // another build (then `mismatch`). `build_id` is then the one the target
  // recorded.
  std::string error;
  bool mismatch = false;
  // The unwind tables came from the image in the target's memory.
  bool from_memory = false;
  // How `file` was found (locate::OriginName) and whether it came from
  // debuginfod.
  std::string file_origin;
  bool fetched = false;
  // Separate debug information the module used (its .debug_frame): the
  // file ("" for MiniDebugInfo), its kind ("debug" or "minidebuginfo"),
  // where it was found, and whether it came from debuginfod.
  std::string debug_file;
  std::string debug_kind;
  std::string debug_origin;
  bool debug_fetched = false;
  // Generated code a runtime announced (a jitdump's, the GDB JIT
  // interface's): the runtime's name for it; "" for files.
  std::string jit_name;
};

struct ProcessStacks {
  pid_t pid = 0;
  arch::Arch arch = arch::Arch::kX86_64;
  std::vector<ThreadStack> threads;
  std::vector<ModuleInfo> modules;  // every module a frame refers to
};

// `pc`'s offset in the file `m` maps (target address space in, file offset
// out): pc - the start of the mapping that holds it + that mapping's file
// offset, as perf's map__map_ip computes it. A return address just past
// the end of a mapping (a call as its last instruction) is looked up as
// pc - 1. 0 if no mapping of `m` holds either.
uint64_t FileOffsetOf(const MappedModule& m, uint64_t pc);

// Unwinds one thread from `initial`.
ThreadStack UnwindRegisters(AddressSpace& space, memory::Memory& memory,
                            const arch::RegisterSet& initial,
                            const UnwindOptions& options);

// The same into `out`, reusing its storage: a stream of samples unwinds
// without allocating once `out` has grown. Frames' modules are indexes into
// space.modules().
void UnwindRegistersInto(AddressSpace& space, memory::Memory& memory,
                         const arch::RegisterSet& initial, const UnwindOptions& options,
                         ThreadStack* out);

// What ProcessStacks::modules says of an AddressSpace's module.
ModuleInfo DescribeModule(const MappedModule& module);

// Unwinds every thread of `target`.
ProcessStacks UnwindTarget(proc::Target& target, ModuleCache& cache,
                           const UnwindOptions& options);
// The same with an address space that outlives the call, so that its opened
// modules and per-PC step cache serve the next call too (a stream of
// samples of one process). `space` must have been built over `target`, or
// over a target with the same mappings and files.
ProcessStacks UnwindTarget(proc::Target& target, AddressSpace& space,
                           const UnwindOptions& options);

}  // namespace unwindd::unwinder

#endif  // UNWINDD_UNWINDER_UNWINDER_H_
