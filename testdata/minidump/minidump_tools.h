// The tools the minidump tests compare with (docs/crash-pipelines.md "How
// it is tested"), run the way each test needs them:
//   - Breakpad's core2md, minidump_dump, minidump_stackwalk and dump_syms
//     (scripts/breakpad_tools.sh installs them from npm's `minidump`);
//   - Debian's lldb, reading a minidump with `lldb -c`;
//   - our `unwind minidump`.
//
//   absl::StatusOr<std::string> bp = BreakpadTools();   // Unavailable: skip
//   absl::StatusOr<std::string> md = Core2md(*bp, core, pid_files, dir + "/x.dmp");
//   absl::StatusOr<StackwalkOutput> sw = Stackwalk(*bp, *md, symbol_dir);
#ifndef UNWINDD_TESTDATA_MINIDUMP_MINIDUMP_TOOLS_H_
#define UNWINDD_TESTDATA_MINIDUMP_MINIDUMP_TOOLS_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "testdata/harness/frames.h"

namespace unwindd::harness {

// The directory scripts/breakpad_tools.sh prints (its bin/ has the tools).
// Unavailable (the test skips) when the script says the npm registry
// cannot be reached; other failures are errors.
absl::StatusOr<std::string> BreakpadTools();

// Copies /proc/PID/{maps,auxv,cmdline,environ,status} into `dir`, as
// core2md wants them next to a gcore core.
absl::Status CopyProcFiles(pid_t pid, const std::string& dir);

// `core2md CORE PROCFS_DIR OUT`; returns OUT.
absl::StatusOr<std::string> Core2md(const std::string& tools, const std::string& core,
                                    const std::string& procfs, const std::string& out);

// Where Breakpad's CFI is wrong: file name -> the file-address ranges of
// functions whose CFI dump_syms says it "cannot yet translate" (DWARF
// expressions: the CFA of gcc's i386 stack realignment in main, a
// sigreturn trampoline's registers). dump_syms drops those rules and
// keeps the others, so minidump_stackwalk still calls the caller it
// computes from them "call frame info".
using UntranslatableCfi = std::map<std::string, std::vector<std::pair<uint64_t, uint64_t>>>;

// Breakpad's symbol store layout (minidump_stackwalk's SYMBOL_DIR):
// DIR/<name>/<id>/<name>.sym, one per file, from `dump_syms -v FILE`;
// adds what it could not translate to `untranslatable` (its FDE offsets
// resolved to PC ranges with `readelf --debug-dump=frames`).
absl::Status DumpSyms(const std::string& tools, const std::vector<std::string>& files,
                      const std::string& dir, UntranslatableCfi* untranslatable);

// What `minidump_dump` read, which must be every stream that is present,
// without an error: the thread list's ids in its order, and the memory
// list's ranges [start, end).
struct MinidumpDump {
  std::vector<int64_t> tids;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  bool Holds(uint64_t addr) const;
};
absl::StatusOr<MinidumpDump> ReadWithMinidumpDump(const std::string& tools,
                                                  const std::string& minidump);

// A minidump holds each thread's stack from its SP up, not the memory a
// signal handler's caller runs on when the handler runs on an alternate
// stack: there a minidump's walk ends early, with memory_error, where a
// core's goes on. `full` (a core's frames, from `unwind core`) with each
// such thread cut to the minidump's length: a thread of `md` that is a
// proper prefix of `full`'s, stopped with memory_error, whose next frame's
// SP in `full` is in no range the minidump holds. Other differences stay
// for CompareThreadFrames to report. `cut` receives how many were cut.
ThreadFrames CutWhereNotCaptured(const UnwindOutput& md, const UnwindOutput& full,
                                 const MinidumpDump& dump, int* cut);
// The same cut applied to another tool's frames of the core (eu-stack's).
ThreadFrames CutLike(const ThreadFrames& other, const ThreadFrames& cut_full);

struct StackwalkFrame {
  uint64_t pc = 0;
  std::string trust;  // "given as instruction pointer in context", "call frame info", ...
  std::string where;  // "libc.so.6!read + 0x4c"
};
// Thread index in the minidump's list -> frames.
using StackwalkOutput = std::map<int, std::vector<StackwalkFrame>>;

// `minidump_stackwalk MINIDUMP SYMBOL_DIR` (its human-readable output,
// which says how each frame was found; -m leaves that out).
absl::StatusOr<StackwalkOutput> Stackwalk(const std::string& tools,
                                          const std::string& minidump,
                                          const std::string& symbols);

// Breakpad's frames as found by CFI (and frame 0), compared with ours:
// for each thread, frame i of both while Breakpad found it "given as
// instruction pointer in context" or by "call frame info"; a frame it
// scanned for ends the comparison of that thread (after a scan it may be
// on another path than a CFI unwinder); so does the frame ours restored
// from a kernel signal frame (Breakpad has no rule for those), and the
// frame after one in a function whose CFI dump_syms could not translate
// (`untranslatable`). `frames` counts the frames compared.
struct CfiComparison {
  int threads = 0;
  int frames = 0;
  std::string diff;  // empty when every compared frame agreed
};
CfiComparison CompareCfiFrames(const StackwalkOutput& breakpad,
                               const std::vector<int64_t>& tids,
                               const UnwindOutput& ours,
                               const UntranslatableCfi& untranslatable);

// `lldb -b -c MINIDUMP` with external debug-info lookup off, printing each
// thread's id and every frame's registers' pc and sp. lldb shows a frame
// for each function inlined at a PC (from the modules' DWARF), each with
// a call site's address as its pc but the registers of the frame they
// were inlined into: frames with the same registers are one. `search_dir`
// (may be ""): where lldb finds modules the minidump names by a path that
// is not a file here (the vDSO, "linux-gate.so").
absl::StatusOr<ThreadFrames> LldbMinidumpFrames(const std::string& minidump,
                                                const std::string& search_dir);

// The vDSO image of live process `pid` written to DIR/linux-gate.so, the
// name Breakpad (and our writer) give it in a minidump's module list.
absl::Status ExtractVdso(pid_t pid, const std::string& dir);

struct UnwindMinidumpResult {
  UnwindOutput frames;
  std::string json;
  std::string errors;
};
// `UNWIND minidump FILE ARGS... --format=json --max-frames=4096`.
absl::StatusOr<UnwindMinidumpResult> UnwindMinidumpFrames(
    const std::string& unwind, const std::string& minidump,
    const std::vector<std::string>& args);

// The paths of the files `pid` maps (its /proc/PID/maps).
std::vector<std::string> MappedFiles(pid_t pid);

}  // namespace unwindd::harness

#endif  // UNWINDD_TESTDATA_MINIDUMP_MINIDUMP_TOOLS_H_
