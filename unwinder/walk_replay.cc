#include "unwinder/walk_replay.h"

#include <limits>
#include <optional>

namespace unwindd::unwinder {
namespace {

bool FitsInt16(int v) {
  return v >= std::numeric_limits<int16_t>::min() && v <= std::numeric_limits<int16_t>::max();
}

}  // namespace

void WalkReplay::Append(Record& r, const Step& step, const Frame& frame) {
  Check c;
  Extra x;
  const bool outermost = r.frames.empty();
  const Check* caller = outermost ? nullptr : &r.checks.back();
  const Extra* caller_x = outermost ? nullptr : &r.extras.back();
  static const StepRow kNone{};
  const StepRow& taken = step.row >= 0 ? rows_[step.row] : kNone;
  const CompactRow& row = taken.row;
  const int cfa_reg = row.cfa_reg();
  // The outermost frame's step found no caller (how: r.end); every other
  // one read the caller's PC at the caller's SP + ra_offset.
  const bool reads_ra = !row.ra_undefined();
  bool ok = step.row >= 0 && !step.instruction_pointer && cfa_reg < 64 &&
            (!reads_ra || FitsInt16(row.ra_offset())) &&
            (outermost ? (r.end == End::kUndefined && !reads_ra) ||
                             (r.end == End::kZeroPc && reads_ra)
                       : caller->replayable && reads_ra);
  c.ra_offset = static_cast<int16_t>(ok && reads_ra ? row.ra_offset() : 0);
  // What the rest needs of this frame's registers: its own CFA register
  // (unless SP), and what the caller needs, unless this step restores it
  // from a slot (then that slot is checked like the return address).
  int need = -1;
  uint64_t value = 0;
  if (ok && cfa_reg != sp_reg_) {
    need = cfa_reg;
    value = taken.cfa_value;
  }
  if (ok && caller != nullptr && caller->need_reg >= 0) {
    if (std::optional<int> at = row.SavedOffset(caller->need_reg); at.has_value()) {
      ok = FitsInt16(*at);
      c.slot = ok;
      c.slot_offset = static_cast<int16_t>(ok ? *at : 0);
      x.slot_value = caller_x->need_value;
    } else if (caller->need_reg == row.ra_reg()) {
      ok = false;  // set from the return address: not followed
    } else if (need >= 0 && (need != caller->need_reg || value != caller_x->need_value)) {
      ok = false;  // two registers needed at once: not followed
    } else {
      need = caller->need_reg;
      value = caller_x->need_value;
    }
  }
  c.replayable = ok;
  c.need_reg = static_cast<int16_t>(ok ? need : -1);
  x.need_value = ok ? value : 0;
  r.frames.push_back(frame);
  r.checks.push_back(c);
  r.extras.push_back(x);
}

WalkReplay::Mode WalkReplay::Begin(uint64_t key, int sp_reg) {
  last_ = nullptr;
  steps_.clear();
  rows_.clear();
  sp_reg_ = sp_reg;
  auto it = records_.find(key);
  if (it != records_.end()) {
    Record& r = it->second;
    if (r.misses >= kSkipAfter && ++r.misses % kRetryEvery != 0) return Mode::kNone;
    if (!r.frames.empty()) {
      last_ = &r;
      if (!r.refresh) return Mode::kReplay;
    }
  }
  return Mode::kRecord;
}

void WalkReplay::Reused(int junction, size_t stepped) {
  if (last_ == nullptr) return;
  ++stats_.walks;
  if (junction >= 0) {
    ++stats_.replayed_walks;
    stats_.replayed_frames += static_cast<uint64_t>(junction);
  }
  // Fewer frames taken than stepped: the next walk records itself.
  last_->refresh = junction < 0 || stepped > static_cast<size_t>(junction);
}

void WalkReplay::Commit(uint64_t key, const Frame* frames, int junction, StopReason stop,
                        const std::string& detail, End end, uint64_t end_cfa) {
  auto it = records_.find(key);
  const size_t old_frames = it == records_.end() ? 0 : it->second.frames.size();
  size_t kept = 0;
  if (junction >= 0 && static_cast<size_t>(junction) < old_frames) {
    kept = static_cast<size_t>(junction) + 1;
  }
  ++stats_.walks;
  if (kept > 0) {
    ++stats_.replayed_walks;
    stats_.replayed_frames += kept - 1;
  }
  // (More than kMaxRecordFrames steps: AddFrame stopped adding them.)
  const size_t total = kept + steps_.size() - (kept > 0 ? 1 : 0);
  if (frames_total_ - old_frames + total > kMaxFrames || records_.size() >= kMaxRecords) {
    records_.clear();
    frames_total_ = 0;
    it = records_.end();
    kept = 0;
  }
  Record& r = it == records_.end() ? records_[key] : it->second;
  frames_total_ -= r.frames.size();
  // A walk that stepped to an end no row decided (or too far) has no frame
  // to replay from: only the miss is kept.
  if (total > kMaxRecordFrames || steps_.empty() || (kept == 0 && end == End::kNone)) {
    r.Truncate(0);
    ++r.misses;
    return;
  }
  r.misses = 0;
  r.refresh = false;
  if (kept > 0) {
    // The walk's last frame added is the junction: the old record keeps
    // [0, junction], the junction's frame as this walk reached it (the
    // method of the step into it is this walk's), then this walk's frames.
    r.Truncate(kept);
    r.frames.back() = frames[steps_.size() - 1];
    for (size_t i = steps_.size() - 1; i-- > 0;) Append(r, steps_[i], frames[i]);
  } else {
    r.Truncate(0);
    r.end = end;
    r.end_cfa = end_cfa;
    r.stop = stop;
    r.stop_detail = detail;
    for (size_t i = steps_.size(); i-- > 0;) Append(r, steps_[i], frames[i]);
  }
  frames_total_ += r.frames.size();
}

}  // namespace unwindd::unwinder
