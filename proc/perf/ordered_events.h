// Time ordering of perf records the way perf's ordered_events do it
// (tools/perf/util/ordered-events.c): records are queued with their
// timestamp; at each PERF_RECORD_FINISHED_ROUND every queued record not
// later than the largest timestamp of the *previous* round is delivered,
// in timestamp order (equal timestamps in arrival order); at the end the
// rest. perf record writes a round after each pass over all CPUs' ring
// buffers, so nothing still to come in the stream can be earlier than
// that. A record earlier than one already delivered (it should not
// happen) is counted and delivered with the next flush, as perf does.
//
//   OrderedQueue q(limits);
//   q.Push({.time = t, .offset = off, .size = n});
//   q.FlushRound(deliver);  // at FINISHED_ROUND
//   q.FlushAll(deliver);    // at the end
//
// Bounded: past max_events queued records or max_bytes of records held
// (copies, or chunks of a read input: all but a file in memory), the older half is delivered early (perf's OE_FLUSH__HALF
// when its queue reaches its allocation limit).
#ifndef UNWINDD_PROC_PERF_ORDERED_EVENTS_H_
#define UNWINDD_PROC_PERF_ORDERED_EVENTS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/status.h"

namespace unwindd::proc::perf {

inline constexpr uint64_t kMaxQueuedEvents = uint64_t{4} << 20;
inline constexpr uint64_t kMaxQueuedBytes = uint64_t{256} << 20;

class OrderedQueue {
 public:
  struct Entry {
    uint64_t time = 0;
    uint64_t seq = 0;     // set by Push: arrival order
    uint64_t offset = 0;  // file/stream offset of the record
    uint32_t size = 0;
    int32_t attr_index = -1;
    // Where the record's bytes are, when not at `offset` of a file in
    // memory: in a chunk of the input that `owner` keeps, or else in `copy`
    // (the source cannot give them again).
    const uint8_t* data = nullptr;
    std::shared_ptr<const void> owner;
    std::vector<uint8_t> copy;
    // A sample whose stack copy a sparse reader left in the file: where.
    uint64_t stack_file_offset = 0;
  };
  using Deliver = std::function<absl::Status(Entry&)>;

  explicit OrderedQueue(uint64_t max_events = kMaxQueuedEvents,
                        uint64_t max_bytes = kMaxQueuedBytes)
      : max_events_(max_events), max_bytes_(max_bytes) {}

  // Queues `e`; may deliver the older half first when the queue is full.
  absl::Status Push(Entry e, const Deliver& deliver);
  // PERF_RECORD_FINISHED_ROUND.
  absl::Status FlushRound(const Deliver& deliver);
  // End of input.
  absl::Status FlushAll(const Deliver& deliver);

  size_t size() const { return queue_.size(); }
  uint64_t out_of_order() const { return out_of_order_; }
  uint64_t early_flushes() const { return early_flushes_; }
  uint64_t max_queued() const { return max_queued_; }

 private:
  // Delivers, in (time, seq) order, every queued entry with time <= limit,
  // or the first `count` entries when count is given.
  absl::Status DeliverUpTo(uint64_t limit, size_t count, const Deliver& deliver);

  const uint64_t max_events_;
  const uint64_t max_bytes_;
  std::vector<Entry> queue_;
  bool sorted_ = true;
  // DeliverUpTo's scratch for sorting queue_, kept for their capacity.
  struct Key {
    uint64_t time;
    uint64_t seq;
    size_t index;
  };
  std::vector<Key> order_;
  std::vector<Entry> sorting_;
  uint64_t bytes_ = 0;
  uint64_t seq_ = 0;
  uint64_t max_timestamp_ = 0;
  uint64_t next_flush_ = 0;
  uint64_t last_flush_ = 0;
  uint64_t out_of_order_ = 0;
  uint64_t early_flushes_ = 0;
  uint64_t max_queued_ = 0;
};

}  // namespace unwindd::proc::perf

#endif  // UNWINDD_PROC_PERF_ORDERED_EVENTS_H_
