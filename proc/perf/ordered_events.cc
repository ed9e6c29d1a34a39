#include "proc/perf/ordered_events.h"

#include <algorithm>
#include <limits>
#include <utility>

namespace unwindd::proc::perf {
namespace {

// perf's order: by time, equal times in arrival order.
bool Before(uint64_t time_a, uint64_t seq_a, uint64_t time_b, uint64_t seq_b) {
  return time_a != time_b ? time_a < time_b : seq_a < seq_b;
}

// The memory an entry keeps: a copy, or the bytes of the input's chunk it
// holds; nothing for a record in a file in memory.
uint64_t HeldBytes(const OrderedQueue::Entry& e) {
  return e.owner != nullptr ? e.size : e.copy.size();
}

}  // namespace

absl::Status OrderedQueue::Push(Entry e, const Deliver& deliver) {
  if (e.time < last_flush_) ++out_of_order_;
  if (e.time > max_timestamp_) max_timestamp_ = e.time;
  e.seq = seq_++;
  if (!queue_.empty() && Before(e.time, e.seq, queue_.back().time, queue_.back().seq)) {
    sorted_ = false;
  }
  bytes_ += HeldBytes(e);
  queue_.push_back(std::move(e));
  max_queued_ = std::max<uint64_t>(max_queued_, queue_.size());
  if (queue_.size() > max_events_ || bytes_ > max_bytes_) {
    ++early_flushes_;
    return DeliverUpTo(std::numeric_limits<uint64_t>::max(),
                       std::max<size_t>(1, queue_.size() / 2), deliver);
  }
  return absl::OkStatus();
}

absl::Status OrderedQueue::FlushRound(const Deliver& deliver) {
  absl::Status s = DeliverUpTo(next_flush_, queue_.size(), deliver);
  next_flush_ = max_timestamp_;
  return s;
}

absl::Status OrderedQueue::FlushAll(const Deliver& deliver) {
  return DeliverUpTo(std::numeric_limits<uint64_t>::max(), queue_.size(), deliver);
}

absl::Status OrderedQueue::DeliverUpTo(uint64_t limit, size_t count,
                                       const Deliver& deliver) {
  if (queue_.empty()) return absl::OkStatus();
  if (!sorted_) {
    // The (time, seq, index) keys are sorted, and each entry is moved once
    // into its place: sorting the entries themselves moved each of them
    // (~100 bytes, a shared owner, a vector) many times.
    order_.clear();
    for (size_t i = 0; i < queue_.size(); ++i) {
      order_.push_back({queue_[i].time, queue_[i].seq, i});
    }
    std::sort(order_.begin(), order_.end(),
              [](const Key& a, const Key& b) { return Before(a.time, a.seq, b.time, b.seq); });
    sorting_.clear();
    sorting_.reserve(queue_.size());
    for (const Key& k : order_) sorting_.push_back(std::move(queue_[k.index]));
    queue_.swap(sorting_);
    sorting_.clear();
    sorted_ = true;
  }
  size_t n = 0;
  while (n < queue_.size() && n < count && queue_[n].time <= limit) ++n;
  absl::Status status;
  size_t done = 0;
  for (; done < n; ++done) {
    Entry& e = queue_[done];
    last_flush_ = e.time;
    bytes_ -= HeldBytes(e);
    status = deliver(e);
    if (!status.ok()) {
      ++done;
      break;
    }
  }
  queue_.erase(queue_.begin(), queue_.begin() + done);
  return status;
}

}  // namespace unwindd::proc::perf
