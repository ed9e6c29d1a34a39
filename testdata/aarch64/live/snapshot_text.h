// A live process's state as text lines, so that a guest with nothing but a
// serial console can hand a profiler-style sample to the host: per thread
// the registers (DWARF numbering) and a copy of the stack from SP up, plus
// the process's mappings, a copy of its [vdso] and the pointer-
// authentication masks (NT_ARM_PAC_MASK). capture_main.cc writes it inside
// the aarch64 guest (testdata/aarch64/live/run.sh); live_test.cc parses it on
// the x86_64 host and unwinds each thread through proc::SnapshotTarget.
//
//   std::string text = FormatCapture(capture);        // in the guest
//   absl::StatusOr<Capture> c = ParseCapture(text);    // on the host
//
// Every line starts with "UWD-SNAP " (other console lines are ignored):
//
//   UWD-SNAP begin pid=1234 arch=aarch64
//   UWD-SNAP pac target 0x007f000000000000 0x007f000000000000   (or "none")
//   UWD-SNAP pac raw 0x007f000000000000 0x007f000000000000      (or "none")
//   UWD-SNAP map 0xaaaad0000000 0xaaaad0001000 r-xp 0x0 42 /fixtures/demo
//                (start end perms offset inode path; path "-" if none)
//   UWD-SNAP vdso 0xffff9a5f2000 8192
//   UWD-SNAP bytes 0xffff9a5f2000 7f454c46...     (up to 64 bytes, hex)
//   UWD-SNAP zero 0xffff9a5f2040 128              (a run of zero bytes)
//   UWD-SNAP thread 1235 0xffffe0c0a0d0           (tid, stack address)
//   UWD-SNAP reg 30 0xaaaad00009f4
//   UWD-SNAP bytes 0xffffe0c0a0d0 ...
//   UWD-SNAP end
//
// "bytes"/"zero" lines extend the latest "vdso" or "thread" section and must
// be contiguous. The parser treats the text as hostile (it comes through a
// console): sizes are bounded and every number is checked.
#ifndef UNWINDD_TESTDATA_AARCH64_LIVE_SNAPSHOT_TEXT_H_
#define UNWINDD_TESTDATA_AARCH64_LIVE_SNAPSHOT_TEXT_H_

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "arch/pac_mask.h"
#include "arch/register_set.h"
#include "proc/maps.h"

namespace unwindd::testdata::live {

// Bounds on what ParseCapture accepts.
inline constexpr size_t kMaxCaptureBytes = size_t{4} << 20;  // per section
inline constexpr size_t kMaxCaptureThreads = 1024;
inline constexpr size_t kMaxCaptureMappings = 4096;

struct CapturedThread {
  pid_t tid = 0;
  arch::RegisterSet registers{arch::Arch::kAArch64};
  uint64_t stack_address = 0;  // target address of stack[0]
  std::vector<uint8_t> stack;
};

struct Capture {
  pid_t pid = 0;
  // What proc::LiveTarget reported (its ReadPacMask) and what a plain
  // PTRACE_GETREGSET(NT_ARM_PAC_MASK) of the main thread returned.
  std::optional<arch::PacMask> pac_target;
  std::optional<arch::PacMask> pac_raw;
  std::vector<proc::Mapping> mappings;
  uint64_t vdso_address = 0;
  std::vector<uint8_t> vdso;  // empty: no [vdso] copy
  std::vector<CapturedThread> threads;
};

// The lines above, each ending in '\n'.
std::string FormatCapture(const Capture& capture);

// Every capture in `text` (a console log), in order. InvalidArgument for a
// malformed or unterminated block, with the line number.
absl::StatusOr<std::vector<Capture>> ParseCaptures(absl::string_view text);

}  // namespace unwindd::testdata::live

#endif  // UNWINDD_TESTDATA_AARCH64_LIVE_SNAPSHOT_TEXT_H_
