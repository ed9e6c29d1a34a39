#include "service/server/batch_reader.h"

#include <algorithm>
#include <climits>
#include <utility>

namespace unwindd::service {
namespace {

// Wire types (encoding guide, "Message Structure"); 3 and 4 (groups) are
// left to protobuf.
constexpr uint32_t kVarint = 0;
constexpr uint32_t kI64 = 1;
constexpr uint32_t kLen = 2;
constexpr uint32_t kI32 = 5;

// SnapshotBatch.samples and SnapshotRequest.stack.
constexpr uint64_t kSamplesField = 1;
constexpr uint64_t kStackField = 8;

// protobuf reads a tag as a uint32 and a length as a non-negative int32;
// what is outside goes to protobuf (which refuses it).
bool ValidTag(uint64_t tag) { return tag <= UINT32_MAX && (tag >> 3) != 0; }
bool ValidLength(uint64_t n) { return n <= INT_MAX; }

}  // namespace

bool ReceivedBatch::Parse(const grpc::ByteBuffer& bytes) {
  std::vector<grpc::Slice> slices;
  if (!bytes.Dump(&slices).ok()) return false;
  return Parse(std::move(slices));
}

bool ReceivedBatch::Parse(std::vector<grpc::Slice> slices) {
  slices_ = std::move(slices);
  slice_ = 0;
  p_ = end_ = nullptr;
  if (!slices_.empty()) {
    p_ = slices_[0].begin();
    end_ = slices_[0].end();
  }
  left_ = 0;
  for (const grpc::Slice& s : slices_) left_ += s.size();
  batch_.Clear();  // keeps the samples' objects and their strings' room
  stacks_.clear();
  split_count_ = 0;
  gathered_count_ = 0;
  rest_.clear();
  if (Walk()) return true;
  return ParseWhole();
}

bool ReceivedBatch::ParseWhole() {
  whole_.clear();
  for (const grpc::Slice& s : slices_) {
    whole_.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  batch_.Clear();
  stacks_.clear();
  if (!batch_.ParseFromString(whole_)) return false;
  if (gathered_.size() < static_cast<size_t>(batch_.samples_size())) {
    gathered_.resize(batch_.samples_size());
  }
  for (int i = 0; i < batch_.samples_size(); ++i) {
    // Moved out, so that the batch's samples look the same either way.
    gathered_[i].clear();
    gathered_[i].swap(*batch_.mutable_samples(i)->mutable_stack());
    stacks_.emplace_back(absl::MakeConstSpan(
        reinterpret_cast<const uint8_t*>(gathered_[i].data()), gathered_[i].size()));
  }
  return true;
}

bool ReceivedBatch::Walk() {
  while (left_ > 0) {
    tag_bytes_.clear();
    uint64_t tag = 0;
    if (!Varint(&tag, &tag_bytes_) || !ValidTag(tag)) return false;
    if (tag >> 3 == kSamplesField && (tag & 7) == kLen) {
      uint64_t size = 0;
      if (!Varint(&size, nullptr) || !ValidLength(size) || size > left_) return false;
      if (!WalkSample(size)) return false;
      continue;
    }
    rest_ += tag_bytes_;
    if (!CopyPayload(tag & 7, &rest_)) return false;
  }
  return rest_.empty() || batch_.MergeFromString(rest_);
}

bool ReceivedBatch::WalkSample(uint64_t size) {
  const uint64_t end = left_ - size;  // left_ once the sample is read
  const size_t index = stacks_.size();
  if (gathered_.size() <= index) gathered_.resize(index + 1);
  StackCopy stack;
  sample_rest_.clear();
  while (left_ > end) {
    tag_bytes_.clear();
    uint64_t tag = 0;
    if (!Varint(&tag, &tag_bytes_) || !ValidTag(tag)) return false;
    if (tag >> 3 == kStackField && (tag & 7) == kLen) {
      uint64_t n = 0;
      if (!Varint(&n, nullptr) || !ValidLength(n) || left_ < end || n > left_ - end) {
        return false;
      }
      // A singular field given twice: the last one counts, as in protobuf.
      if (!Take(n, &gathered_[index], &stack)) return false;
      continue;
    }
    sample_rest_ += tag_bytes_;
    if (!CopyPayload(tag & 7, &sample_rest_)) return false;
  }
  if (left_ != end) return false;  // a field ran past the sample
  if (!batch_.add_samples()->ParseFromString(sample_rest_)) return false;
  stacks_.push_back(stack);
  return true;
}

bool ReceivedBatch::NextSlice() {
  while (p_ == end_) {
    if (slice_ + 1 >= slices_.size()) return false;
    ++slice_;
    p_ = slices_[slice_].begin();
    end_ = slices_[slice_].end();
  }
  return true;
}

bool ReceivedBatch::Varint(uint64_t* v, std::string* raw) {
  if (end_ - p_ >= 10) {
    // The usual case: all of it in this slice.
    uint64_t value = 0;
    for (int i = 0; i < 10; ++i) {
      const uint8_t b = p_[i];
      value |= static_cast<uint64_t>(b & 0x7f) << (7 * i);
      if ((b & 0x80) == 0) {
        if (raw != nullptr) raw->append(reinterpret_cast<const char*>(p_), i + 1);
        p_ += i + 1;
        left_ -= i + 1;
        *v = value;
        return true;
      }
    }
    return false;  // more than 10 bytes
  }
  uint64_t value = 0;
  for (int i = 0; i < 10; ++i) {
    if (left_ == 0 || !NextSlice()) return false;
    const uint8_t b = *p_++;
    --left_;
    if (raw != nullptr) raw->push_back(static_cast<char>(b));
    value |= static_cast<uint64_t>(b & 0x7f) << (7 * i);
    if ((b & 0x80) == 0) {
      *v = value;
      return true;
    }
  }
  return false;
}

bool ReceivedBatch::Copy(uint64_t n, std::string* out) {
  if (n > left_) return false;
  left_ -= n;
  while (n > 0) {
    NextSlice();  // there is one: n <= what was left
    const size_t take = std::min<uint64_t>(n, end_ - p_);
    out->append(reinterpret_cast<const char*>(p_), take);
    p_ += take;
    n -= take;
  }
  return true;
}

bool ReceivedBatch::Take(uint64_t n, std::string* scratch, StackCopy* out) {
  if (n > left_) return false;
  *out = {};
  if (n == 0) return true;
  NextSlice();  // there is one with bytes: n <= what was left
  const uint64_t here = static_cast<uint64_t>(end_ - p_);
  if (here >= n) {
    out->head = absl::MakeConstSpan(p_, n);
    p_ += n;
    left_ -= n;
    return true;
  }
  // Split where this slice ends: the rest in place too when the next slice
  // holds all of it.
  if (slice_ + 1 < slices_.size() && slices_[slice_ + 1].size() >= n - here) {
    out->head = absl::MakeConstSpan(p_, here);
    ++slice_;
    p_ = slices_[slice_].begin();
    end_ = slices_[slice_].end();
    out->tail = absl::MakeConstSpan(p_, n - here);
    p_ += n - here;
    left_ -= n;
    ++split_count_;
    return true;
  }
  scratch->clear();
  if (!Copy(n, scratch)) return false;
  ++gathered_count_;
  out->head = absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(scratch->data()), n);
  return true;
}

bool ReceivedBatch::CopyPayload(uint32_t wire_type, std::string* out) {
  uint64_t n = 0;
  switch (wire_type) {
    case kVarint:
      return Varint(&n, out);
    case kI64:
      return Copy(8, out);
    case kI32:
      return Copy(4, out);
    case kLen:
      return Varint(&n, out) && ValidLength(n) && Copy(n, out);
    default:
      return false;  // groups, and wire types that do not exist
  }
}

}  // namespace unwindd::service
