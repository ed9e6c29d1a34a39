// What a recent walk of each thread of an address space did (its record),
// so that the thread's later walks can take the frames their stacks share
// with it instead of stepping through them again.
//
// A profiler's consecutive samples of a thread mostly differ near the leaf:
// the outer frames (main, the event loop, the recursion above the sample)
// are the same frames at the same stack addresses. A step the step cache
// serves (a CompactRow) is a function of the frame's PC, its SP, the value
// of the row's CFA register and the words it reads. Of those words only
// the return address decides the caller's PC, and a saved register only
// matters if an outer row computes its CFA from it; the other registers a
// row restores make no frame. So when a walk reaches a frame with the PC
// and SP a frame of the recorded walk had, and from there on every return
// address (and every such saved register) reads the same now, and the CFA
// register that walk needed, if not SP, holds the same value, the rest of
// the walk is the rest of that walk, frame for frame, down to its stop
// reason, however long ago it was recorded. Checking a return address
// costs a load and a compare; stepping costs a lookup and a row.
//
//   WalkReplay& replay = space.walk_replay();
//   mode = replay.Begin(key, sp_reg);              // each walk
//   replay.AddFrame(instruction_pointer);          // each frame
//   replay.EndStep(row, cfa_value);                // its step, if fast
//   replay.Commit(key, frames, junction, stop, detail, end, end_cfa);
//     (or, a walk that only replayed: replay.Reused(junction, stepped))
//
// Only steps of the step cache's fast path are replayable, and only a walk
// that ended at such a step finding no caller (End): a walk that stopped
// on an error, a signal frame, a loop, a frame limit or a cancel is not
// replayed past.
// Bounded: records of at most kMaxRecordFrames frames, kMaxFrames frames
// and kMaxRecords threads in all per address space (then every record is
// dropped and walks record afresh). Not for targets whose return addresses
// carry non-address bits (aarch64 PAC): the caller's PC is then not the
// word read. Not thread-safe: an AddressSpace is used by one unwind at a
// time.
#ifndef UNWINDD_UNWINDER_WALK_REPLAY_H_
#define UNWINDD_UNWINDER_WALK_REPLAY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "unwinder/cfi/compact_row.h"
#include "unwinder/frame.h"
#include "unwinder/method.h"

namespace unwindd::unwinder {

class WalkReplay {
 public:
  static constexpr size_t kMaxRecordFrames = 1024;
  static constexpr size_t kMaxFrames = 8192;
  static constexpr size_t kMaxRecords = 4096;
  static constexpr uint32_t kSkipAfter = 4;
  static constexpr uint32_t kRetryEvery = 16;

  // How a replayable walk ended: its outermost frame's fast step found the
  // return address undefined (_start, a thread's start), or read it as 0
  // (Go's goexit) at its CFA + that frame's ra_offset.
  enum class End : uint8_t { kNone, kUndefined, kZeroPc };

  // What the step from a frame read (beside the frame itself): the return
  // address at the caller's SP (the step's CFA) + ra_offset, and, if
  // `slot`, the saved register the rest needs at the caller's SP +
  // slot_offset, which held Extra::slot_value.
  struct Check {
    int16_t ra_offset = 0;
    int16_t slot_offset = 0;
    bool slot = false;
    // A walk at this frame's PC and SP (a return address, not where a
    // thread was) whose reads read the same goes on as this record did,
    // given `need_reg` (if >= 0) holds Extra::need_value at this frame.
    bool replayable = false;
    int16_t need_reg = -1;
  };
  struct Extra {
    uint64_t need_value = 0;
    uint64_t slot_value = 0;
  };
  // Outermost frame first: frames[0] is where the walk ended. The three
  // vectors run in parallel (the checks are read on every replay, the
  // extras only at a junction or a slot).
  struct Record {
    std::vector<Frame> frames;  // as the walk output them
    std::vector<Check> checks;
    std::vector<Extra> extras;
    End end = End::kNone;
    uint64_t end_cfa = 0;  // kZeroPc: the outermost step's CFA
    StopReason stop = StopReason::kEndOfStack;
    std::string stop_detail;
    uint32_t misses = 0;  // walks in a row that ended with nothing to replay
    bool refresh = false;  // the next walk records itself

    // Keeps frames [0, n), the three vectors together.
    void Truncate(size_t n) {
      frames.resize(n);
      checks.resize(n);
      extras.resize(n);
    }
  };

  // What a walk of a thread does with its record.
  enum class Mode : uint8_t {
    kNone,    // neither replays nor records (nothing else is called)
    kReplay,  // may replay from last(), then Reused(); records nothing
    kRecord,  // may replay from last(), records itself, then Commit()
  };
  // Starts a walk of `key` (a thread); `sp_reg` is the arch's SP register
  // (a CFA on it needs nothing but the frame's SP, which the junction
  // matches). Recording costs about what it saves, so a walk records only
  // when its thread has no record, or the last walk took fewer frames from
  // it than it stepped through (a record is as good as new as long as its
  // rest reads the same: it is checked each time). A thread whose last
  // kSkipAfter recorded walks or more ended where no replay can follow (a
  // stack copy cut short ends every walk of a thread on a failed read) is
  // recorded one walk in kRetryEvery, and otherwise neither.
  Mode Begin(uint64_t key, int sp_reg);
  // After a kReplay walk: whether and where it took its rest from last():
  // `junction` as Commit's, `stepped` the frames it walked before it.
  void Reused(int junction, size_t stepped);
  // The record of the walk's thread Begin found, null if none.
  const Record* last() const { return last_; }

  // Recording a walk: each frame in the order walked (innermost first),
  // then its step.
  void AddFrame(bool instruction_pointer) {
    // Past kMaxRecordFrames the walk will not be kept: stop growing.
    if (steps_.size() > kMaxRecordFrames) return;
    steps_.push_back({instruction_pointer, -1});
  }
  // The last frame's step, taken by the step cache's `row` (to its caller,
  // or to no caller), with its CFA register's value `cfa_value` before the
  // step. Not called for a step the general path took.
  void EndStep(const CompactRow& row, uint64_t cfa_value) {
    if (steps_.empty() || steps_.size() > kMaxRecordFrames) return;
    steps_.back().row = static_cast<int32_t>(rows_.size());
    rows_.push_back({row, cfa_value});
  }

  // Stores the walk just recorded as `key`'s record. `frames[i]` is the
  // i-th frame added, as output. `junction`: the index in the old record
  // of the frame the walk took the rest from (its last frame added), or -1
  // if it stepped to its end, `end` (and `end_cfa`) how.
  void Commit(uint64_t key, const Frame* frames, int junction, StopReason stop,
              const std::string& detail, End end, uint64_t end_cfa);

  size_t frames() const { return frames_total_; }
  // Walks recorded, and how many of them (and of their frames) were taken
  // from a record.
  struct Stats {
    uint64_t walks = 0;
    uint64_t replayed_walks = 0;
    uint64_t replayed_frames = 0;
  };
  const Stats& stats() const { return stats_; }

 private:
  struct Step {
    bool instruction_pointer;
    int32_t row;  // index in rows_; -1: the general path took it
  };
  struct StepRow {
    CompactRow row;
    uint64_t cfa_value;
  };
  // Appends the frame `step` was taken from (`frame`, the callee of the
  // record's last frame) to `r`.
  void Append(Record& r, const Step& step, const Frame& frame);

  absl::flat_hash_map<uint64_t, Record> records_;
  size_t frames_total_ = 0;
  std::vector<Step> steps_;
  std::vector<StepRow> rows_;
  int sp_reg_ = -1;
  Record* last_ = nullptr;
  Stats stats_;
};

}  // namespace unwindd::unwinder

#endif  // UNWINDD_UNWINDER_WALK_REPLAY_H_
