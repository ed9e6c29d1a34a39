// A SnapshotBatch (proto/unwinder.proto) read from the bytes gRPC received,
// with each sample's stack copy borrowed where it lies instead of copied:
// protobuf's parser copies every `bytes` field into a string of its own,
// which for stack copies of 8-64 KiB is the largest thing the server does
// per byte received (after the kernel's own copy out of the socket).
//
//   ReceivedBatch in;
//   grpc::ByteBuffer bytes;              // stream->Read(&bytes)
//   if (!in.Parse(bytes)) { ...not a SnapshotBatch: the stream ends... }
//   for (int i = 0; i < in.batch().samples_size(); ++i) {
//     use(in.batch().samples(i), in.stack(i));   // samples' `stack` is empty
//   }
//
// How: the wire format (https://protobuf.dev/programming-guides/encoding/)
// is walked over the received slices. A sample's `stack` field (8) is
// noted where it lies: in place when it is within one slice, in place in
// two pieces when it runs on into the next slice (StackCopy: a walk reads
// each word from its piece), else gathered into a buffer of the reader's.
// The server takes HTTP/2 frames of any size, so a stack is split only
// where one of gRPC's 64 KiB read buffers ends: on the corpus
// (docs/speed.md, "A recording through unwindd") about a fifth of 12 KiB
// stacks and two fifths of 24-32 KiB ones are split, and copying them
// whole was 8% of the server's CPU on 32 KiB stacks.
// Every other field, of the samples and of the batch, is copied as it is
// and parsed by protobuf, so the result is exactly what protobuf makes of
// the message, stacks aside (batch_reader_test and the snapshot-request
// fuzzer compare them). Anything the walk does not expect (groups, a
// malformed varint or length) makes it parse the whole message with
// protobuf instead, which gives protobuf's answer, errors included.
//
// The stacks stay valid until the next Parse or the reader's end.
#ifndef UNWINDD_SERVICE_SERVER_BATCH_READER_H_
#define UNWINDD_SERVICE_SERVER_BATCH_READER_H_

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/slice.h"
#include "proto/unwinder.pb.h"

namespace unwindd::service {

// A sample's stack copy as received: `head`, then, when it came split
// between two of the received buffers, `tail` (the bytes after head's
// last).
struct StackCopy {
  // From one piece, implicitly: a request's own stack copy.
  StackCopy(absl::Span<const uint8_t> head = {}, absl::Span<const uint8_t> tail = {})
      : head(head), tail(tail) {}
  size_t size() const { return head.size() + tail.size(); }

  absl::Span<const uint8_t> head;
  absl::Span<const uint8_t> tail;
};

class ReceivedBatch {
 public:
  // False if `bytes` is not a SnapshotBatch protobuf would parse (what
  // gRPC's own deserialisation refuses).
  bool Parse(const grpc::ByteBuffer& bytes);
  // The same from slices (tests: any split of a message).
  bool Parse(std::vector<grpc::Slice> slices);

  // The batch, every sample's `stack` empty.
  const v1::SnapshotBatch& batch() const { return batch_; }
  // Sample i's stack copy.
  const StackCopy& stack(int i) const { return stacks_[i]; }

  // Stacks of the last Parse that lie in two pieces, and that had to be
  // gathered (they straddled more than two slices), for tests.
  int split() const { return split_count_; }
  int gathered() const { return gathered_count_; }

 private:
  // The wire walk; false sends Parse to protobuf's whole-message parse.
  bool Walk();
  bool WalkSample(uint64_t size);
  bool ParseWhole();

  std::vector<grpc::Slice> slices_;
  v1::SnapshotBatch batch_;
  std::vector<StackCopy> stacks_;
  // Gathered stacks, one buffer per sample index (kept: their room is
  // reused by the next batches). A deque: growing it does not move the
  // strings, short ones included, that stacks_ points into.
  std::deque<std::string> gathered_;
  int split_count_ = 0;
  int gathered_count_ = 0;
  // The batch's other fields, and one sample's other fields, as wire bytes.
  std::string rest_;
  std::string sample_rest_;
  std::string whole_;
  std::string tag_bytes_;
  // The walk's position: the slice, the rest of it, and the bytes left in
  // the message.
  size_t slice_ = 0;
  const uint8_t* p_ = nullptr;
  const uint8_t* end_ = nullptr;
  uint64_t left_ = 0;

  // Moves to the next slice with bytes when this one is used up; false
  // if there is none.
  bool NextSlice();
  // A varint of at most 10 bytes; its bytes appended to `raw` if given.
  bool Varint(uint64_t* v, std::string* raw);
  // `n` bytes appended to `out`.
  bool Copy(uint64_t n, std::string* out);
  // `n` bytes in place when they are in one slice or run on into the
  // next, else gathered into `scratch`.
  bool Take(uint64_t n, std::string* scratch, StackCopy* out);
  // A field's payload after its tag, appended to `out`.
  bool CopyPayload(uint32_t wire_type, std::string* out);
};

}  // namespace unwindd::service

#endif  // UNWINDD_SERVICE_SERVER_BATCH_READER_H_
