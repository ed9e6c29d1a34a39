// The serial console of the live aarch64 guest (guest_init.sh), parsed into
// one record per fixture: each tool's stdout/stderr and exit status, and the
// TracerPid of every thread after each tool; plus gdb's MI frame lists
// turned into per-thread PCs.
//
//   absl::StatusOr<ConsoleLog> log = ParseConsoleLog(console_text);
//   for (const FixtureRun& f : log->fixtures) {
//     const ToolBlock* gdb = f.Block("gdb");
//     absl::StatusOr<GdbMiFrames> frames = ParseGdbMiFrames(gdb->text);
//   }
//
// Marker lines (see guest_init.sh) start with "UWD-LIVE ", "UWD-BLOCK " and
// "UWD-BLOCK-END "; a block's text is every line between its markers, with
// the console's "\r" removed. The log is hostile input like any other.
#ifndef UNWINDD_TESTDATA_AARCH64_LIVE_CONSOLE_LOG_H_
#define UNWINDD_TESTDATA_AARCH64_LIVE_CONSOLE_LOG_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "testdata/harness/frames.h"

namespace unwindd::testdata::live {

struct ToolBlock {
  std::string text;
  int exit_code = -1;
};

struct TracerCheck {
  std::string after;  // the tool that had just run: unwind, gdb, capture
  int64_t tid = 0;
  int64_t tracer_pid = -1;
};

struct FixtureRun {
  std::string name;
  int64_t pid = 0;
  int threads = 0;
  bool ready = false;   // the fixture printed "ready"
  bool done = false;    // guest_init.sh reached the end of this fixture
  int capture_exit_code = -1;
  std::map<std::string, ToolBlock> blocks;  // "unwind", "unwind-stderr", ...
  std::vector<TracerCheck> tracers;

  const ToolBlock* Block(absl::string_view kind) const;
  // A "_pac" fixture: built with -mbranch-protection=standard.
  bool pac() const;
};

struct ConsoleLog {
  std::string kernel;
  bool paca = false;  // /proc/cpuinfo Features: address authentication
  bool pacg = false;  // generic authentication
  bool bti = false;
  std::vector<FixtureRun> fixtures;
  bool ended = false;      // "UWD-LIVE end" seen
  int end_fixtures = -1;   // the count guest_init.sh reported there
  double uptime_s = 0;     // the guest's uptime at the end
};

// InvalidArgument for a malformed marker, a block that does not end, or a
// block outside a fixture. At most 4096 fixtures and 64 MiB per block.
absl::StatusOr<ConsoleLog> ParseConsoleLog(absl::string_view text);

// gdb's `thread apply all interpreter-exec mi "-stack-list-frames"`: a
// "Thread N (... LWP TID ...):" header, then "^done,stack=[frame={...},...]".
struct GdbMiFrames {
  harness::ThreadFrames pcs;
  // tid -> indexes of the frames gdb names "<signal handler called>" (the
  // kernel's signal trampoline, __kernel_rt_sigreturn in the vDSO).
  std::map<int64_t, std::vector<int>> signal_frames;
  // tid -> how many frames gdb flagged addr_flags="PAC" (a return address
  // it found signed and stripped).
  std::map<int64_t, int> pac_flagged;
};
absl::StatusOr<GdbMiFrames> ParseGdbMiFrames(absl::string_view text);

}  // namespace unwindd::testdata::live

#endif  // UNWINDD_TESTDATA_AARCH64_LIVE_CONSOLE_LOG_H_
