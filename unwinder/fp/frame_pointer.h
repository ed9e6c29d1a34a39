// Frame-pointer unwinding as an unwind source: the Row that follows the
// frame-pointer chain of an ABI (arch/frame_pointer.h), and the checks that
// keep it from following garbage.
//
//   Row row = FramePointerRow(Arch::kX86_64);   // CFA = rbp + 16,
//                                               // RA at CFA - 8, rbp at CFA -
//                                               16
//   StackBounds b = StackBoundsFor(target.mappings(), regs.sp());
//   FrameRecordCheck c = CheckFrameRecord(regs, b);  // before applying the row
//
// x86_64 and i386 keep {saved fp, return address} at the frame pointer;
// aarch64 keeps its frame record {x29, x30} at x29. The row goes through
// ApplyRow like any other; CheckFrameRecord must accept the callee's
// registers first: the frame pointer is aligned, lies in the thread's stack
// (the mapping that holds sp) at or above sp, and the whole record fits
// there. Since the caller's CFA is then above the callee's sp, CFAs strictly
// increase along a chain of checked steps.
#ifndef UNWINDD_UNWINDER_FP_FRAME_POINTER_H_
#define UNWINDD_UNWINDER_FP_FRAME_POINTER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "arch/arch.h"
#include "arch/register_set.h"
#include "proc/maps.h"
#include "unwinder/cfi/row.h"

namespace unwindd::unwinder::fp {

// Target addresses [lo, hi) a frame record may occupy.
struct StackBounds {
  uint64_t lo = 0;
  uint64_t hi = 0;
  bool known = false;  // no mapping held sp: only the span cap below applies
};

// Without a mapping for sp (a snapshot that copied only part of the stack),
// frame records are accepted up to this far above sp.
inline constexpr uint64_t kMaxUnmappedStackSpan = uint64_t{64} << 20;

// The mapping that contains `sp` (the [stack] mapping of the main thread, an
// anonymous mapping for other threads, a sigaltstack after a signal).
StackBounds StackBoundsFor(const std::vector<proc::Mapping>& mappings,
                           uint64_t sp);

// CFA = fp + caller_sp_offset; saved fp and RA at their offsets from it.
// pc_lo/pc_hi are 0 (the row holds wherever it is used).
Row FramePointerRow(arch::Arch arch);

// What the frame pointer of a frame says, before the frame-pointer row is
// applied to it: a usable record, the end of the chain (a zero frame
// pointer, the usual marker: glibc's _start clears rbp), or no record (the
// chain does not describe this frame).
struct FrameRecordCheck {
  enum class Verdict : uint8_t { kRecord, kEndOfChain, kNoRecord };
  Verdict verdict = Verdict::kNoRecord;
  // Why there is no record (the frame pointer unknown, misaligned, below sp,
  // or its record outside `bounds`), for stop_detail; empty otherwise.
  std::string why;
};
FrameRecordCheck CheckFrameRecord(const arch::RegisterSet& regs,
                                  const StackBounds& bounds);

}  // namespace unwindd::unwinder::fp

#endif  // UNWINDD_UNWINDER_FP_FRAME_POINTER_H_
