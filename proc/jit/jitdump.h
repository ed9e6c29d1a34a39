// perf's jitdump files (tools/perf/Documentation/jitdump-specification.txt;
// tools/perf/util/jitdump.{h,c}): what a JIT runtime (node --perf-prof,
// Java agents, .NET, Wasmtime) writes about the code it generates, for
// profilers. A runtime writes `jit-PID.dump` and maps it PROT_EXEC once, so
// that the mapping (perf's MMAP2 record, /proc/PID/maps, a core's NT_FILE)
// names the file.
//
//   absl::StatusOr<JitDump> d = ParseJitDump(bytes);
//   for (const JitCode& c : d->codes) ... c.code_addr, c.name, c.eh_frame
//
// The format, as node 18/20 and perf 6.1 write and read it:
//   header (40 bytes): u32 magic 0x4A695444 ("JiTD" little-endian; the
//     byte-swapped value means the other endianness), u32 version (1),
//     u32 total_size (of the header), u32 elf_mach, u32 pad, u32 pid,
//     u64 timestamp, u64 flags;
//   records: u32 id, u32 total_size (of the record), u64 timestamp, then
//     0 CODE_LOAD: u32 pid, u32 tid, u64 vma, u64 code_addr, u64 code_size,
//       u64 code_index, the name (NUL-terminated), code_size code bytes;
//     1 CODE_MOVE: u32 pid, u32 tid, u64 vma, u64 old_code_addr,
//       u64 new_code_addr, u64 code_size, u64 code_index;
//     2 CODE_DEBUG_INFO: u64 code_addr, u64 nr_entry, entries (line
//       tables; not used here);
//     3 CODE_CLOSE: nothing (the end);
//     4 CODE_UNWINDING_INFO: u64 unwinding_size, u64 eh_frame_hdr_size,
//       u64 mapped_size, then the data: .eh_frame, whose last
//       eh_frame_hdr_size bytes are its .eh_frame_hdr (the specification's
//       prose has the opposite order; perf's genelf and node agree on this
//       one). It describes the CODE_LOAD that follows it. Its addresses
//       resolve with the data placed at ALIGN_8(code_addr + code_size).
//       mapped_size 0 with an empty table means "no CFI: the code keeps a
//       frame pointer" (node gives real FDEs only for TurboFan code).
//
// Timestamps are CLOCK_MONOTONIC unless the header's flags say
// JITDUMP_FLAGS_ARCH_TIMESTAMP (the CPU's counter). A dump of a process
// that is still running (or was killed) may end inside a record: what is
// complete is used, and `truncated` says so. Everything is bounded and
// checked: sizes, counts, names, the records' framing.
#ifndef UNWINDD_PROC_JIT_JITDUMP_H_
#define UNWINDD_PROC_JIT_JITDUMP_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace unwindd::proc::jit {

inline constexpr uint32_t kJitDumpMagic = 0x4A695444;
inline constexpr uint64_t kJitFlagArchTimestamp = 1;
inline constexpr size_t kJitHeaderSize = 40;
// Bounds on what a dump may make us hold.
inline constexpr uint64_t kMaxJitCodeBytes = uint64_t{64} << 20;  // one CODE_LOAD
inline constexpr size_t kMaxJitName = 4096;
inline constexpr size_t kMaxJitCodes = size_t{1} << 20;

enum class JitRecordType : uint32_t {
  kCodeLoad = 0,
  kCodeMove = 1,
  kCodeDebugInfo = 2,
  kCodeClose = 3,
  kCodeUnwindingInfo = 4,
};

// One piece of generated code, from its CODE_LOAD (or a CODE_MOVE of it).
struct JitCode {
  uint64_t time = 0;        // the record's timestamp
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint64_t code_addr = 0;   // where the code is in the process
  uint64_t code_size = 0;
  uint64_t code_index = 0;  // the runtime's number for it (perf's jitted-PID-N.so)
  std::string name;
  // Shared with the dump's bytes (no copy): the code, and the unwinding
  // information of the CODE_UNWINDING_INFO before it (empty if none or
  // if it says "no CFI").
  std::shared_ptr<const std::vector<uint8_t>> bytes;
  absl::Span<const uint8_t> code;
  absl::Span<const uint8_t> eh_frame;      // without the header
  absl::Span<const uint8_t> eh_frame_hdr;  // the data's last bytes
  // Set when a CODE_MOVE put this code elsewhere: the copy at the new
  // address is another JitCode (with the move's time).
  bool moved = false;
};

struct JitDump {
  uint32_t pid = 0;
  uint32_t elf_mach = 0;
  uint64_t timestamp = 0;
  uint64_t flags = 0;
  bool swapped = false;    // written with the other byte order
  bool truncated = false;  // ended inside a record (a running process's)
  bool closed = false;     // a CODE_CLOSE was seen
  std::vector<JitCode> codes;  // in the dump's order
  uint64_t skipped = 0;    // records of unknown type, or that did not fit
};

// `bytes` is a whole (or the start of a) jitdump file; it is kept alive by
// the JitCodes (their spans point into it). DataLoss for a header that is
// not a jitdump's; a record that breaks the framing ends the parse (what
// came before stays, `truncated` set).
absl::StatusOr<JitDump> ParseJitDump(std::shared_ptr<const std::vector<uint8_t>> bytes);

// Whether `path`'s file name is a jitdump's: "jit-<digits>.dump".
bool IsJitDumpPath(absl::string_view path);

}  // namespace unwindd::proc::jit

#endif  // UNWINDD_PROC_JIT_JITDUMP_H_
