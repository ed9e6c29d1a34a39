// Per-thread frame PCs as eu-stack, gdb and our `unwind` CLI report them, the
// parsers for each tool's output, and a readable diff for test failures.
//
// All three tools report the same kind of address per frame, so the PCs can
// be compared with ==: frame 0 is the thread's PC; a caller frame is the
// return address exactly as read from the stack (not minus one); the frame
// above a signal frame (__restore_rt) is the exact interrupted PC. PCs are in
// the target's address space (not module-relative).
#ifndef UNWINDD_TESTDATA_HARNESS_FRAMES_H_
#define UNWINDD_TESTDATA_HARNESS_FRAMES_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace unwindd::harness {

// tid -> frame PCs, innermost first.
using ThreadFrames = std::map<int64_t, std::vector<uint64_t>>;
// PC -> symbol name as a tool printed it; only used to annotate diffs.
using SymbolNames = std::map<uint64_t, std::string>;

// Parses `eu-stack -p PID` stdout:
//   TID 1234:
//   #0  0x00007f1c2a6f16 read
//   #1  0x000055d3c2a01234 - 1 ReadForever      (only with -a)
// Frame lines must be numbered 0, 1, 2... under each TID line. Names, when
// present, go to `names` if it is not null.
absl::StatusOr<ThreadFrames> ParseEuStackOutput(absl::string_view text,
                                                SymbolNames* names = nullptr);

// Parses the output of kGdbFramesScript (tools.h): "UWD-TID <lwp>" then
// "UWD-PC 0x<pc>" lines, ended by "UWD-END". Other lines (gdb's own chatter
// such as "[New LWP 5]") are ignored; a missing UWD-END is an error because
// it means the script died half-way.
absl::StatusOr<ThreadFrames> ParseGdbOutput(absl::string_view text);

// One frame of `unwind --format=json`.
struct UnwindFrame {
  uint64_t pc = 0;
  uint64_t sp = 0;  // 0 when absent
  std::string method;  // initial, eh_frame, debug_frame, sframe, ...
  std::string module;
  std::string rel_pc;
};

struct UnwindThread {
  std::string stop;  // end_of_stack, no_unwind_info, ...
  std::vector<UnwindFrame> frames;
};

struct UnwindOutput {
  std::map<int64_t, UnwindThread> threads;

  ThreadFrames Pcs() const;
  // "tid 12: stop=end_of_stack, methods initial eh_frame ..." per thread,
  // for failure messages.
  std::string Describe() const;
};

// Parses `unwind ... --format=json` (DESIGN.md "Output contract"). Strict
// about what the comparison needs: "threads" array; per thread an integer
// "tid", a string "stop" and a "frames" array; per frame a "0x..." hex "pc".
// "sp" (hex), "method", "module" and "rel_pc" are kept when present; other
// fields (build_id) are ignored.
absl::StatusOr<UnwindOutput> ParseUnwindJson(absl::string_view text);

// Parses "0x1a2b" (the prefix is required) into `out`.
bool ParseHexPc(absl::string_view text, uint64_t* out);

struct Comparison {
  int threads = 0;  // In either side.
  int matched = 0;  // In both sides with identical PCs.
  // Empty when everything matched; otherwise one block per differing thread:
  //
  //   thread 1235: first difference at frame 3 (eu-stack 6 frames, gdb 7)
  //         #  eu-stack            gdb
  //         0  0x00007f1c2a6f1600  0x00007f1c2a6f1600  read
  //      >  3  0x000055e0c0ffee00  0x0000000000000000  ReaderMiddle
  //   thread 1240: only in eu-stack (5 frames)
  //
  // Long stacks show a few frames of context before the first difference
  // and a bounded number after it.
  std::string diff;

  bool ok() const { return diff.empty(); }
};

// The i386 rule for eu-stack. On 32-bit programs eu-stack (elfutils 0.188)
// ends a walk silently (exit status 0, no error) after a frame that
// realigned its stack: gcc describes such a frame's CFA with
// DW_CFA_def_cfa_expression (DW_OP_breg5 (ebp) -16; DW_OP_deref) and its
// saved registers with DW_CFA_expression, and eu-stack does not get past it.
// On i386 gcc realigns every `main`, so eu-stack stops right after main,
// where gdb goes on through __libc_start_call_main and __libc_start_main to
// _start, at which glibc's CFI marks eip undefined. We match gdb. So for
// eu-stack only: a thread whose eu-stack frames are a proper prefix of
// `full`'s and whose last eu-stack frame is named "main" (in eu-stack's own
// symbol output, `names`) is compared on that prefix. (realign.c realigns
// other functions too, which is why it has no 32-bit variant.)
// Returns `full` with those threads cut to eu-stack's length; `cut` (if not
// null) receives how many threads were cut. Every other thread, and every
// other difference, is left for CompareThreadFrames to report.
ThreadFrames ApplyI386EuStackRule(const ThreadFrames& full,
                                  const ThreadFrames& eu_stack,
                                  const SymbolNames& names, int* cut);

Comparison CompareThreadFrames(absl::string_view left_name,
                               const ThreadFrames& left,
                               absl::string_view right_name,
                               const ThreadFrames& right,
                               const SymbolNames* names = nullptr);

// Threads of `ours` that equal both references: eu-stack's frames against
// `ours_for_eu` (ours after ApplyI386EuStackRule, or `ours` itself) and
// gdb's against `ours`. What the end-to-end tests report as "matched".
int CountMatchedBoth(const ThreadFrames& ours, const ThreadFrames& ours_for_eu,
                     const ThreadFrames& eu_stack, const ThreadFrames& gdb);

}  // namespace unwindd::harness

#endif  // UNWINDD_TESTDATA_HARNESS_FRAMES_H_
