// Our unwound frames printed the way `perf script` prints a sample of a
// `perf record --call-graph dwarf` recording, so that a user can diff the
// two line by line:
//
//   busy 25068   539.397690:     250000 cpu-clock: 
//   	           10a9 [unknown] (/tmp/busy)
//   	          27249 [unknown] (/usr/lib/x86_64-linux-gnu/libc.so.6)
//   <blank line>
//
// The header is perf script's default for a software event recorded per
// thread (comm, tid, [cpu when recorded], time, period, event name); each
// frame is "\t%16x SYMBOL (DSO)" with what perf puts there, except that we
// never have symbols (the project is symbol-free) and print "[unknown]",
// perf's own word for an address without one.
//
// The address perf prints for a user frame (tools/perf/util/
// unwind-libunwind-local.c get_entries, unwind-libdw.c frame_callback, and
// thread.c / machine.c unwind_entry):
//   - the frame's lookup address: the PC itself for frame 0 and for the
//     frame a signal interrupted, the return address minus 1 for every
//     other caller (perf "decrements the IP for any non-activation
//     frames", as dwfl_frame_pc's isactivation tells);
//   - converted with map__map_ip() of the perf mapping (one MMAP/MMAP2
//     record) holding it: address - map start + map pgoff, i.e. the file
//     offset — not our rel_pc, which is the ELF virtual address;
//   - unchanged for anonymous memory ("//anon", "[stack]", "[heap]"...,
//     perf's identity__map_ip), and printed as "[unknown] ([unknown])"
//     outside every mapping.
//
// JIT code a runtime announced is the exception to "[unknown]": perf
// inject --jit writes each piece of a jitdump as a jitted-PID-N.so with one
// symbol, the runtime's name for it, at the code's start (file offset
// 0x80), and perf names code in anonymous executable memory by
// /tmp/perf-PID.map; perf prints "NAME+0xOFF", OFF the lookup address's
// offset in the named code, and so do we.
//
// Depends only on //unwinder (and the proc::Mapping it exposes), so that
// the CLI can use it for `unwind perf --format=perf-script`.
#ifndef UNWINDD_SERVICE_CLI_PERF_SCRIPT_PERF_SCRIPT_H_
#define UNWINDD_SERVICE_CLI_PERF_SCRIPT_PERF_SCRIPT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "proc/jit/perf_map.h"
#include "proc/maps.h"
#include "service/cli/perf_script/text_buffer.h"
#include "unwinder/unwinder.h"

namespace unwindd::cli {

struct PerfScriptHeader {
  std::string comm;
  uint32_t tid = 0;
  std::optional<uint32_t> cpu;  // only when the recording has CPU
  uint64_t time_ns = 0;         // perf_clock nanoseconds
  uint64_t period = 0;
  std::string event;            // "cpu-clock"
};

// "comm tid [cpu] sec.usec: period event: \n"
std::string FormatPerfScriptHeader(const PerfScriptHeader& h);
void AppendPerfScriptHeader(const PerfScriptHeader& h, TextBuffer* out);

// Which addresses perf prints for a sample's user frames. kUnwound: its
// DWARF unwinder's frames, each but the first (and a signal frame) one
// byte before its return address, in the call (perf's libunwind and libdw
// code subtracts 1). kRecorded: a callchain the kernel recorded (perf
// record -g), every address as recorded.
enum class FrameAddresses { kUnwound, kRecorded };

// The address perf script prints for frame `i` of `frames` and the DSO
// name it prints with it ("[unknown]" outside every mapping).
struct PerfFrameAddress {
  uint64_t address = 0;
  absl::string_view dso;  // valid while the PerfScriptMappings lives
  // JIT code's name and the address's offset in it ("" for none).
  absl::string_view symbol;
  uint64_t symbol_offset = 0;
};

// A target's mappings prepared for perf script's address rule: built once
// per mapping table, then used for every frame of every sample over it.
class PerfScriptMappings {
 public:
  // What names code no file names.
  struct Names {
    // Empty, or one per mapping: the name of the JIT code the mapping
    // holds from its start (a jitdump's), "" for none.
    absl::Span<const std::string> code_names;
    // The process: perf calls its anonymous executable memory
    // "/tmp/perf-PID.map" (proc/jit/perf_map.h NamedByPerfMap), and names
    // code there by that map when there is one. 0: unknown ("//anon").
    pid_t pid = 0;
    const proc::jit::PerfMap* perf_map = nullptr;
  };
  // `mappings` sorted by start (proc::Target::mappings()).
  explicit PerfScriptMappings(absl::Span<const proc::Mapping> mappings)
      : PerfScriptMappings(mappings, Names{}) {}
  PerfScriptMappings(absl::Span<const proc::Mapping> mappings, const Names& names);

  PerfFrameAddress Address(absl::Span<const unwinder::Frame> frames, size_t i,
                           FrameAddresses kind = FrameAddresses::kUnwound) const;

 private:
  struct Entry {
    uint64_t start = 0;
    uint64_t end = 0;
    uint64_t offset = 0;
    bool identity = false;  // anonymous memory: addresses printed unconverted
    std::string dso;
    std::string symbol;  // JIT code's name, from `start`
    const proc::jit::PerfMap* perf_map = nullptr;  // names its code
  };
  // `hint`, a previous answer, is tried first: a stack's frames cluster
  // in a few mappings.
  const Entry* Find(uint64_t address, const Entry* hint = nullptr) const {
    if (hint != nullptr && address >= hint->start && address < hint->end) return hint;
    return Search(address);
  }
  const Entry* Search(uint64_t address) const;
  // Inline: it runs for every frame of every sample.
  PerfFrameAddress AddressWithHint(absl::Span<const unwinder::Frame> frames, size_t i,
                                   FrameAddresses kind, const Entry** hint) const {
    const unwinder::Frame& f = frames[i];
    const bool exact =
        i == 0 || f.method == unwinder::Method::kSignal || kind == FrameAddresses::kRecorded;
    const uint64_t lookup = exact || f.pc == 0 ? f.pc : f.pc - 1;
    const Entry* e = Find(lookup, *hint);
    if (e == nullptr) return {lookup, "[unknown]"};
    *hint = e;
    if (e->identity) {
      PerfFrameAddress a{lookup, e->dso};
      if (e->perf_map != nullptr) {
        if (const proc::jit::PerfMapEntry* s = e->perf_map->Find(lookup)) {
          a.symbol = s->name;
          a.symbol_offset = lookup - s->start;
        }
      }
      return a;
    }
    return {lookup - e->start + e->offset, e->dso, e->symbol, lookup - e->start};
  }
  friend void AppendPerfScriptFrames(const unwinder::ThreadStack& stack,
                                     const PerfScriptMappings& mappings, TextBuffer* out,
                                     FrameAddresses kind);
  std::vector<Entry> entries_;
};

// One "\t%16x [unknown] (dso)\n" line per frame of `stack` (JIT code:
// "\t%16x NAME+0xOFF (dso)\n").
std::string FormatPerfScriptFrames(const unwinder::ThreadStack& stack,
                                   absl::Span<const proc::Mapping> mappings);
void AppendPerfScriptFrames(const unwinder::ThreadStack& stack,
                            const PerfScriptMappings& mappings, TextBuffer* out,
                            FrameAddresses kind = FrameAddresses::kUnwound);

// Kernel callchain entries (PERF_SAMPLE_CALLCHAIN below
// PERF_CONTEXT_USER, markers removed) the way perf prints them above the
// user frames: "\t%16x [unknown] ([kernel.kallsyms])\n".
std::string FormatPerfScriptKernelFrames(absl::Span<const uint64_t> ips);
void AppendPerfScriptKernelFrames(absl::Span<const uint64_t> ips, TextBuffer* out);

}  // namespace unwindd::cli

#endif  // UNWINDD_SERVICE_CLI_PERF_SCRIPT_PERF_SCRIPT_H_
