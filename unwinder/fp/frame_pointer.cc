#include "unwinder/fp/frame_pointer.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "absl/strings/str_format.h"
#include "arch/frame_pointer.h"

namespace unwindd::unwinder::fp {

StackBounds StackBoundsFor(const std::vector<proc::Mapping>& mappings,
                           uint64_t sp) {
  // Targets list their mappings by address (/proc/PID/maps, a snapshot);
  // a list that is not sorted still gets the right answer, by a scan.
  auto it = std::upper_bound(
      mappings.begin(), mappings.end(), sp,
      [](uint64_t v, const proc::Mapping& m) { return v < m.start; });
  if (it != mappings.begin() && std::prev(it)->Contains(sp)) {
    return StackBounds{std::prev(it)->start, std::prev(it)->end, true};
  }
  for (const proc::Mapping& m : mappings) {
    if (m.Contains(sp)) return StackBounds{m.start, m.end, true};
  }
  StackBounds b;
  b.lo = sp;
  b.hi = sp + kMaxUnmappedStackSpan < sp ? ~uint64_t{0}
                                         : sp + kMaxUnmappedStackSpan;
  return b;
}

Row FramePointerRow(arch::Arch a) {
  const arch::FramePointerRule& r = arch::GetFramePointerRule(a);
  const arch::ArchInfo& info = arch::GetArchInfo(a);
  Row row;
  row.cfa.kind = CfaRule::Kind::kRegOffset;
  row.cfa.reg = static_cast<uint16_t>(r.fp);
  row.cfa.offset = r.caller_sp_offset;
  row.return_address_register = static_cast<uint16_t>(info.ra);
  row.regs[info.ra] = {
      RegisterRule::Kind::kOffset, r.ra_offset - r.caller_sp_offset, {}};
  row.regs[r.fp] = {
      RegisterRule::Kind::kOffset, r.saved_fp_offset - r.caller_sp_offset, {}};
  return row;
}

FrameRecordCheck CheckFrameRecord(const arch::RegisterSet& regs,
                                  const StackBounds& bounds) {
  using Verdict = FrameRecordCheck::Verdict;
  auto no_record = [](std::string why) {
    return FrameRecordCheck{Verdict::kNoRecord, std::move(why)};
  };
  const arch::FramePointerRule& r = arch::GetFramePointerRule(regs.arch());
  const uint64_t word = regs.info().address_size;
  if (!regs.Valid(r.fp) || !regs.Valid(regs.info().sp)) {
    return no_record("frame pointer or stack pointer unknown");
  }
  const uint64_t fp = regs.Get(r.fp);
  const uint64_t sp = regs.sp();
  if (fp == 0) return FrameRecordCheck{Verdict::kEndOfChain, ""};
  // The record spans [fp + min offset, fp + caller_sp_offset); every ABI here
  // has it at fp + 0 .. fp + 2 words.
  const uint64_t record = static_cast<uint64_t>(r.caller_sp_offset);
  if (fp % word != 0) {
    return no_record(
        absl::StrFormat("frame pointer 0x%x is not %u-byte aligned", fp, word));
  }
  if (fp < sp) {
    // The caller's CFA (fp + record) would not be above this frame's.
    return no_record(absl::StrFormat(
        "frame pointer 0x%x is below sp 0x%x: the chain goes down", fp, sp));
  }
  if (fp < bounds.lo || fp > bounds.hi || bounds.hi - fp < record) {
    return no_record(absl::StrFormat(
        "frame record at 0x%x is outside the stack [0x%x, 0x%x) above sp 0x%x",
        fp, bounds.lo, bounds.hi, sp));
  }
  return FrameRecordCheck{Verdict::kRecord, ""};
}

}  // namespace unwindd::unwinder::fp
