// Writes any proc::Target (a core, a live process) as a minidump that
// Breakpad's minidump_stackwalk and minidump_dump, lldb and our own
// MinidumpTarget read: what a crash pipeline needs to unwind a crash
// elsewhere, in kilobytes instead of a core's megabytes or gigabytes.
//
//   ProcessInfo info = ...;            // what the Target interface lacks
//   absl::StatusOr<MinidumpWriteResult> r =
//       WriteMinidump(target, info, {.max_stack_bytes = 64 << 10}, "out.dmp");
//
// Streams written (Breakpad's Linux layout):
//   ThreadList     every thread's registers (exact for the crashing thread)
//                  and the stack from SP up, at most max_stack_bytes (and,
//                  given its frames' SPs, the stack below a signal frame
//                  on an alternate stack);
//   ModuleList     one module per mapped file, with its GNU build-id as a
//                  CodeView 'BpEL' record;
//   MemoryList     the stacks, the vDSO image, 256 bytes around the
//                  crashing PC and around frames in anonymous code;
//   Exception      the signal, si_code and fault address, when a thread
//                  was handling one;
//   SystemInfo, MiscInfo (the pid), and the Linux streams: maps, and
//   cmdline, status, auxv, lsb-release, cpuinfo when ProcessInfo has them.
// The environment is never written: it is where secrets live.
#ifndef UNWINDD_PROC_MINIDUMP_WRITER_H_
#define UNWINDD_PROC_MINIDUMP_WRITER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "proc/target.h"

namespace unwindd::proc::minidump {

// What a minidump carries that proc::Target does not give.
struct ProcessInfo {
  std::string command_line;  // NUL-separated, as /proc/PID/cmdline
  std::string proc_status;   // /proc/PID/status text
  std::string auxv;          // raw auxv bytes
  std::string maps;          // /proc/PID/maps text; "": from the mappings
  std::string lsb_release;   // /etc/lsb-release or os-release text
  std::string cpu_info;      // /proc/cpuinfo
  std::string os;            // `uname -srvmo`
  uint8_t processors = 0;
};

// The largest per-thread stack copy a caller may ask for.
inline constexpr uint64_t kMaxStackBytesLimit = uint64_t{64} << 20;

struct MinidumpWriteOptions {
  // Stack bytes per thread, from its SP up (plus the 128-byte red zone
  // below it).
  uint64_t max_stack_bytes = 64 * 1024;
  // Each thread's frames, when the caller unwound it first:
  //   - a frame whose SP is in another mapping than the thread's (the
  //     code a signal handler on an alternate stack interrupted) gets
  //     that stack too, from its SP up, within what is left of
  //     max_stack_bytes;
  //   - a frame whose PC is in memory no file holds (anonymous executable
  //     memory: JIT code, qemu-user's signal trampoline) gets 256 bytes
  //     of code around it: a reader has nowhere else to find them, and
  //     the unwinder recognises a sigreturn trampoline by its code.
  struct Frame {
    uint64_t pc = 0;
    uint64_t sp = 0;
  };
  absl::flat_hash_map<pid_t, std::vector<Frame>> frames;
};

struct MinidumpWriteResult {
  uint64_t bytes = 0;
  uint32_t threads = 0;
  uint32_t modules = 0;
  uint64_t stack_bytes = 0;
  // Threads whose stack was cut at max_stack_bytes.
  uint32_t truncated_stacks = 0;
  std::vector<std::string> warnings;
};

// The minidump's bytes. ResourceExhausted past 4 GiB (32-bit RVAs).
absl::StatusOr<std::vector<uint8_t>> BuildMinidump(
    Target& target, const ProcessInfo& info,
    const MinidumpWriteOptions& options, MinidumpWriteResult* result);

// BuildMinidump written to `path` (created 0600: it holds stack memory),
// replacing it.
absl::StatusOr<MinidumpWriteResult> WriteMinidump(
    Target& target, const ProcessInfo& info,
    const MinidumpWriteOptions& options, const std::string& path);

}  // namespace unwindd::proc::minidump

#endif  // UNWINDD_PROC_MINIDUMP_WRITER_H_
