// A crash's signature for grouping crashes (docs/crash-pipelines.md
// "Signatures"): satyr's duphash over the crashing thread's top frames,
// each written as BUILDID+0xOFFSET, so that the same crash gives the same
// signature on any machine, at any load address, with or without symbols.
//
//   CrashSignature s = ComputeSignature(stacks);
//   s.duphash;   // "5c2f...": SHA-1 hex of "Thread\n" + one line per frame
//
// The rule is satyr's sr_thread_get_duphash (lib/generic_thread.c) with
// core frames (lib/core_frame.c core_append_duphash_text) and the 3 frames
// ABRT hashes (abrt-action-analyze-backtrace.c): the text is "Thread\n",
// then for each frame from the innermost that has a build-id, until 3 are
// written, "%s+0x%" PRIx64 "\n" of the build-id and the build_id_offset;
// frames without a build-id add nothing and do not count. build_id_offset
// is satyr's (core_unwind.c resolve_frame): the PC minus the start of the
// module's lowest mapping. satyr's normalization only changes frames by
// their function names, which symbol-free frames do not have.
#ifndef UNWINDD_SERVICE_COMMON_CRASH_SIGNATURE_H_
#define UNWINDD_SERVICE_COMMON_CRASH_SIGNATURE_H_

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "unwinder/unwinder.h"

namespace unwindd::service {

inline constexpr int kDuphashFrames = 3;

struct CrashSignature {
  std::string duphash;  // lowercase SHA-1 hex; "" when no frame had a build-id
  pid_t crash_tid = 0;
  int signal = 0;       // the crashing thread's signal, 0 if none
  // The hashed lines, without their "\n": "8a2b...+0x1f3c".
  std::vector<std::string> frames;
};

// The crashing thread: the one whose signal carries siginfo (a kernel
// core's NT_SIGINFO goes with the dumping thread; a minidump's exception
// thread), else the first with a signal, else the first thread. nullopt
// if there are no threads.
std::optional<size_t> CrashThreadIndex(const unwinder::ProcessStacks& stacks);

// satyr's build_id_offset of frame `f` in module `m`.
uint64_t BuildIdOffset(const unwinder::Frame& f, const unwinder::ModuleInfo& m);

CrashSignature ComputeSignature(const unwinder::ProcessStacks& stacks,
                                int frames = kDuphashFrames);

// Lowercase hex SHA-1 of `text` (libmd).
std::string Sha1Hex(const std::string& text);

}  // namespace unwindd::service

#endif  // UNWINDD_SERVICE_COMMON_CRASH_SIGNATURE_H_
