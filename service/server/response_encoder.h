// Snapshot responses written straight to protobuf wire bytes: a sample's
// answer (frames, the modules they name, the stop, or an error) becomes a
// SnapshotResponse (proto/unwinder.proto) without building message objects
// first. A snapshot stream answers every sample this way: building ~30
// Frame messages and serialising them cost the server about as much as the
// walk itself (snapshots_benchmark).
//
//   SampleAnswer a;                      // filled by SnapshotSession::Unwind
//   std::string bytes;
//   AppendBatchElement(a, &bytes);       // one of SnapshotBatchResponse.responses
//   AppendSnapshotResponse(a, &bytes);   // or a whole SnapshotResponse
//
// The bytes are what protobuf's deterministic serialisation of the same
// message gives (fields in number order, proto3 defaults left out, `module`
// written whenever it is set since it has presence), so any client parses
// them, and response_encoder_test compares them byte for byte. Wire format:
// https://protobuf.dev/programming-guides/encoding/ (varints, tag =
// field << 3 | wire type, length-delimited submessages and strings).
#ifndef UNWINDD_SERVICE_SERVER_RESPONSE_ENCODER_H_
#define UNWINDD_SERVICE_SERVER_RESPONSE_ENCODER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "proto/unwinder.pb.h"

namespace unwindd::service {

// One sample's answer. Strings are views: they must stay valid until it is
// encoded (the session's address space and table own them).
struct SampleAnswer {
  struct Frame {
    uint64_t pc = 0;
    uint64_t sp = 0;
    v1::Method method = v1::METHOD_UNSPECIFIED;
    int module = -1;  // index into `modules`, -1: none
    uint64_t rel_pc = 0;
    uint64_t file_offset = 0;
  };
  struct Module {
    absl::string_view path;
    absl::string_view build_id;
    uint64_t start = 0;
    uint64_t end = 0;
    uint64_t offset = 0;
    uint64_t load_bias = 0;
    absl::string_view file;
    absl::string_view error;
    bool build_id_mismatch = false;
    bool from_memory = false;
    bool load_bias_unknown = false;
    // Binaries from elsewhere: `file` came from debuginfod; the separate
    // debug information the module used (owned: Module::debug_info()
    // gives a copy).
    bool fetched = false;
    std::string debug_file;
    std::string debug_kind;
    bool debug_fetched = false;
    // The Module message's bytes, when the caller has them already
    // (EncodeModule of the same fields, kept across samples: a session
    // answers the same few modules for every sample of a table). Written as
    // they are; the fields above are then not read.
    const std::string* encoded = nullptr;
  };

  uint64_t sample_id = 0;
  // Not OK: the response carries sample_id and this error only.
  absl::Status error;
  int32_t tid = 0;
  v1::StopReason stop = v1::STOP_REASON_UNSPECIFIED;
  std::string stop_detail;
  std::vector<Frame> frames;
  std::vector<Module> modules;
  std::string pid_ignored_reason;

  // Empties it for the next sample, keeping the vectors' room.
  void Clear();
};

// The bytes of the Module message `m` stands for (its body, not
// length-prefixed; `m.encoded` is ignored).
std::string EncodeModule(const SampleAnswer::Module& m);

// Where answers are encoded: Reserve(n) gives room for n bytes (whose
// contents are unspecified: the encoder overwrites what it keeps), and
// Commit(end) keeps those up to `end`. Answers appended one after the
// other form the message. The server's sink writes into gRPC slices that
// become the reply as they are (service.cc), without zeroing the room
// first or copying the bytes after.
class AnswerSink {
 public:
  virtual ~AnswerSink() = default;
  virtual char* Reserve(size_t n) = 0;
  virtual void Commit(char* end) = 0;
};

// A sink that appends to a string.
class StringSink final : public AnswerSink {
 public:
  explicit StringSink(std::string* out) : out_(out) {}
  char* Reserve(size_t n) override {
    at_ = out_->size();
    out_->resize(at_ + n);
    return out_->data() + at_;
  }
  void Commit(char* end) override { out_->resize(static_cast<size_t>(end - out_->data())); }

 private:
  std::string* out_;
  size_t at_ = 0;
};

// Appends the SnapshotResponse for `a` (its body, not length-prefixed).
void AppendSnapshotResponse(const SampleAnswer& a, AnswerSink& out);
void AppendSnapshotResponse(const SampleAnswer& a, std::string* out);
// Appends `a` as one element of SnapshotBatchResponse.responses (field 1,
// length-delimited), so a batch response is these appended in order.
void AppendBatchElement(const SampleAnswer& a, AnswerSink& out);
void AppendBatchElement(const SampleAnswer& a, std::string* out);

}  // namespace unwindd::service

#endif  // UNWINDD_SERVICE_SERVER_RESPONSE_ENCODER_H_
