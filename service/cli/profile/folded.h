// Folded stacks: the input of Brendan Gregg's flamegraph.pl (and of
// speedscope, inferno, ...). One line per distinct stack, outermost frame
// first, frames joined by ';', then a space and the count:
//
//   demo;demo+0x1234;demo+0x2345;libc.so.6+0x8ff15 42
//   demo;demo+0x1234;0xffffffff81a0b2c3_[k];0xffffffff81a00001_[k] 3
//
//   std::string text = WriteFolded(profile, {.root = FoldedRoot::kComm});
//   // flamegraph.pl text > profile.svg
//
// There are no symbols. A frame is written as `<module file name>+0x<ADDR>`,
// where ADDR is the frame's lookup address (a return address minus 1, as in
// the pprof output, profile.h) in the module's ELF address space: address -
// load bias, the address `addr2line -e MODULE` takes and `unwind` prints as
// rel_pc. If the load bias is unknown, ADDR is the offset in the file
// (address - start + file_offset; the same number for most ELF files, whose
// segments sit at vaddr == file offset), and the frame is written
// `<module file name>@0x<ADDR>` so that the two cannot be confused. A frame
// outside any module is its absolute address `0x<ADDR>`; a kernel frame is
// `0x<ADDR>_[k]` (absolute, as /proc/kallsyms has it; flamegraph.pl
// colors "_[k]" frames as kernel ones).
//
// Lines are sorted, and lines that come out equal (stacks that differ only
// in labels not written) are merged.
#ifndef UNWINDD_SERVICE_CLI_PROFILE_FOLDED_H_
#define UNWINDD_SERVICE_CLI_PROFILE_FOLDED_H_

#include <string>

#include "service/cli/profile/profile.h"

namespace unwindd::profile {

// The root frame of each line, from the sample's labels, as
// stackcollapse-perf.pl writes it (its default, --pid, --tid).
enum class FoldedRoot {
  kNone,        // no root frame
  kComm,        // "demo"
  kCommPid,     // "demo-4242"
  kCommPidTid,  // "demo-4242/4243"
};

struct FoldedOptions {
  FoldedRoot root = FoldedRoot::kComm;
  // The number after each stack: the sample count, or the weight (e.g.
  // cpu-clock nanoseconds).
  bool use_weight = false;
};

std::string WriteFolded(const Profile& profile,
                        const FoldedOptions& options = {});

}  // namespace unwindd::profile

#endif  // UNWINDD_SERVICE_CLI_PROFILE_FOLDED_H_
