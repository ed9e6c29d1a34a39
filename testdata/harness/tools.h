// Runs the three unwinders the end-to-end tests compare on a live process,
// and finds the fixture binaries in the test's runfiles.
//
//   absl::StatusOr<RunningProgram> p =
//   StartProgram(FixturePath("demo_O2_nofp_pie")); absl::StatusOr<ThreadFrames>
//   eu = EuStackFrames(p->pid()); absl::StatusOr<ThreadFrames> gdb =
//   GdbFrames(p->pid());
//
// Each tool attaches with ptrace, so they must run one after the other on a
// given pid (the harness never runs two at once). Each runs under kToolTimeout
// and is killed past it.
//
// What eu-stack and gdb print, checked on every fixture variant (see
// tools_agree_test.cc): thread PC in frame 0; the return address as read from
// the stack in every caller frame (eu-stack -a marks those "- 1" because it
// looks them up at pc-1, but prints the address unchanged; gdb's frame.pc()
// is also the unadjusted return address); after the kernel's signal frame
// (__restore_rt, gdb's SIGTRAMP_FRAME) the exact interrupted PC. Both stop at
// the same outermost frame: _start for the main thread, clone3 for the
// others, because glibc marks the return address undefined there
// (cfi_undefined rip). So the outputs are compared as they are: there is no
// NormalizeOutermost step, since there was never a difference to normalize.
#ifndef UNWINDD_TESTDATA_HARNESS_TOOLS_H_
#define UNWINDD_TESTDATA_HARNESS_TOOLS_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "testdata/harness/frames.h"

namespace unwindd::harness {

inline constexpr absl::Duration kToolTimeout = absl::Seconds(60);

// The gdb Python script GdbFrames runs. For each thread, newest frame first,
// one "UWD-PC" line per real frame: INLINE_FRAME and TAILCALL_FRAME entries
// are gdb's reconstructions from DWARF, not stack frames, and eu-stack (no
// -i) and our unwinder do not report them. SIGTRAMP_FRAME (__restore_rt) is a
// real frame and stays.
extern const char kGdbFramesScript[];

// `eu-stack -n 0 -p PID`: -n 0 lifts the default limit of 256 frames per
// thread (recursion fixtures are deeper); no -i (inline frames), -s (source)
// or -a, which only add text. Symbol names go to `names` for diffs.
absl::StatusOr<ThreadFrames> EuStackFrames(pid_t pid,
                                           SymbolNames* names = nullptr);

// `gdb -nx -batch -p PID` with `set backtrace past-main on` and `set
// backtrace past-entry on` (so gdb, like eu-stack, goes on past main() and
// the entry point until the CFI says stop), running kGdbFramesScript.
absl::StatusOr<ThreadFrames> GdbFrames(pid_t pid);

// `<unwind_binary> pid PID --format=json --max-frames=4096 [extra_args...]`
// (e.g. {"--sources=sframe,eh_frame"}); each frame keeps its method.
absl::StatusOr<UnwindOutput> UnwindFrames(
    const std::string& unwind_binary, pid_t pid,
    const std::vector<std::string>& extra_args = {});

// The directory runfiles of the workspace live in:
// $TEST_SRCDIR/unwindd, or <this binary>.runfiles/unwindd outside `bazel test`.
std::string RunfilesRoot();

// $TEST_SRCDIR/unwindd/testdata/<name>.
std::string FixturePath(const std::string& name);

// A 32-bit i386 fixture variant ("..._m32", variants.bzl).
bool IsI386Variant(absl::string_view name);

// Names of the fixture variants in the runfiles' testdata/ directory
// ("threads_c_O2_nofp_pie", ...; see variants.bzl), sorted. Tests compare
// whatever their `data` brought, so adding a variant needs no code change.
std::vector<std::string> ListFixtureVariants();

}  // namespace unwindd::harness

#endif  // UNWINDD_TESTDATA_HARNESS_TOOLS_H_
