#include "service/server/response_encoder.h"

#include <bit>
#include <cstring>

namespace unwindd::service {
namespace {

// Wire types (encoding guide, "Message Structure").
constexpr uint32_t kVarint = 0;
constexpr uint32_t kLen = 2;

constexpr uint64_t Tag(int field, uint32_t wire) {
  return static_cast<uint64_t>(field) << 3 | wire;
}

// Bytes of `v` as a base-128 varint: 1 to 10, i.e. ceil(bits / 7), as
// (floor(log2) * 9 + 73) / 64 (protobuf's VarintSize64): a shift where
// the division is a multiply chain, and this runs ~200 times a sample.
size_t VarintSize(uint64_t v) {
  const uint32_t log2 = static_cast<uint32_t>(std::bit_width(v | 1)) - 1;
  return (log2 * 9 + 73) >> 6;
}

char* Varint(char* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<char>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<char>(v);
  return p;
}

// int32 and enum values are sign-extended to 64 bits (negative: 10 bytes).
uint64_t FromInt32(int32_t v) { return static_cast<uint64_t>(static_cast<int64_t>(v)); }

// A proto3 scalar field without presence: left out when 0.
size_t VarintFieldSize(int field, uint64_t v) {
  return v == 0 ? 0 : VarintSize(Tag(field, kVarint)) + VarintSize(v);
}
char* VarintField(char* p, int field, uint64_t v) {
  if (v == 0) return p;
  return Varint(Varint(p, Tag(field, kVarint)), v);
}

size_t LenFieldSize(int field, size_t len) {
  return VarintSize(Tag(field, kLen)) + VarintSize(len) + len;
}
char* LenHeader(char* p, int field, size_t len) {
  return Varint(Varint(p, Tag(field, kLen)), len);
}

// A string field without presence: left out when empty.
size_t StringFieldSize(int field, absl::string_view s) {
  return s.empty() ? 0 : LenFieldSize(field, s.size());
}
char* StringField(char* p, int field, absl::string_view s) {
  if (s.empty()) return p;
  p = LenHeader(p, field, s.size());
  std::memcpy(p, s.data(), s.size());
  return p + s.size();
}

// message Frame.
size_t FrameSize(const SampleAnswer::Frame& f) {
  size_t n = VarintFieldSize(1, f.pc) + VarintFieldSize(2, f.sp) +
             VarintFieldSize(3, FromInt32(f.method)) + VarintFieldSize(5, f.rel_pc) +
             VarintFieldSize(6, f.file_offset);
  // `optional uint32 module = 4`: present even when 0.
  if (f.module >= 0) n += VarintSize(Tag(4, kVarint)) + VarintSize(f.module);
  return n;
}
char* WriteFrame(char* p, const SampleAnswer::Frame& f) {
  p = VarintField(p, 1, f.pc);
  p = VarintField(p, 2, f.sp);
  p = VarintField(p, 3, FromInt32(f.method));
  if (f.module >= 0) p = Varint(Varint(p, Tag(4, kVarint)), f.module);
  p = VarintField(p, 5, f.rel_pc);
  return VarintField(p, 6, f.file_offset);
}

// Submessage sizes, computed once for the two passes (size, then write).
struct Sizes {
  std::vector<uint32_t>& frames;   // per frame
  std::vector<uint32_t>& modules;  // per module
  size_t stack = 0;
  size_t error = 0;
  size_t response = 0;
};

// message ThreadStack (no signal: snapshots have none).
size_t StackSize(const SampleAnswer& a, Sizes& sizes) {
  size_t n = VarintFieldSize(1, FromInt32(a.tid));
  sizes.frames.resize(a.frames.size());
  for (size_t i = 0; i < a.frames.size(); ++i) {
    sizes.frames[i] = FrameSize(a.frames[i]);
    n += LenFieldSize(2, sizes.frames[i]);
  }
  return n + VarintFieldSize(3, FromInt32(a.stop)) + StringFieldSize(4, a.stop_detail);
}
char* WriteStack(char* p, const SampleAnswer& a, const Sizes& sizes) {
  p = VarintField(p, 1, FromInt32(a.tid));
  for (size_t i = 0; i < a.frames.size(); ++i) {
    p = WriteFrame(LenHeader(p, 2, sizes.frames[i]), a.frames[i]);
  }
  p = VarintField(p, 3, FromInt32(a.stop));
  return StringField(p, 4, a.stop_detail);
}

// message Module.
size_t ModuleSize(const SampleAnswer::Module& m) {
  return StringFieldSize(1, m.path) + StringFieldSize(2, m.build_id) +
         VarintFieldSize(3, m.start) + VarintFieldSize(4, m.end) +
         VarintFieldSize(5, m.offset) + VarintFieldSize(6, m.load_bias) +
         StringFieldSize(7, m.file) + StringFieldSize(8, m.error) +
         VarintFieldSize(9, m.build_id_mismatch) + VarintFieldSize(10, m.from_memory) +
         VarintFieldSize(11, m.load_bias_unknown);
}
char* WriteModule(char* p, const SampleAnswer::Module& m) {
  p = StringField(p, 1, m.path);
  p = StringField(p, 2, m.build_id);
  p = VarintField(p, 3, m.start);
  p = VarintField(p, 4, m.end);
  p = VarintField(p, 5, m.offset);
  p = VarintField(p, 6, m.load_bias);
  p = StringField(p, 7, m.file);
  p = StringField(p, 8, m.error);
  p = VarintField(p, 9, m.build_id_mismatch);
  p = VarintField(p, 10, m.from_memory);
  return VarintField(p, 11, m.load_bias_unknown);
}

// message SampleError.
size_t ErrorSize(const absl::Status& s) {
  return VarintFieldSize(1, FromInt32(static_cast<int32_t>(s.code()))) +
         StringFieldSize(2, s.message());
}
char* WriteError(char* p, const absl::Status& s) {
  p = VarintField(p, 1, FromInt32(static_cast<int32_t>(s.code())));
  return StringField(p, 2, s.message());
}

// message SnapshotResponse.
void ResponseSize(const SampleAnswer& a, Sizes& sizes) {
  size_t n = VarintFieldSize(1, a.sample_id);
  if (!a.error.ok()) {
    sizes.error = ErrorSize(a.error);
    sizes.response = n + LenFieldSize(4, sizes.error);
    return;
  }
  sizes.stack = StackSize(a, sizes);
  n += LenFieldSize(2, sizes.stack);
  sizes.modules.resize(a.modules.size());
  for (size_t i = 0; i < a.modules.size(); ++i) {
    sizes.modules[i] = ModuleSize(a.modules[i]);
    n += LenFieldSize(3, sizes.modules[i]);
  }
  sizes.response = n + StringFieldSize(5, a.pid_ignored_reason);
}
char* WriteResponse(char* p, const SampleAnswer& a, const Sizes& sizes) {
  p = VarintField(p, 1, a.sample_id);
  if (!a.error.ok()) return WriteError(LenHeader(p, 4, sizes.error), a.error);
  p = WriteStack(LenHeader(p, 2, sizes.stack), a, sizes);
  for (size_t i = 0; i < a.modules.size(); ++i) {
    p = WriteModule(LenHeader(p, 3, sizes.modules[i]), a.modules[i]);
  }
  return StringField(p, 5, a.pid_ignored_reason);
}

// The scratch of one thread's encodings (kept: no allocation per sample).
Sizes& ThreadSizes() {
  thread_local std::vector<uint32_t> frames, modules;
  thread_local Sizes sizes{frames, modules};
  return sizes;
}

}  // namespace

void SampleAnswer::Clear() {
  sample_id = 0;
  error = absl::OkStatus();
  tid = 0;
  stop = v1::STOP_REASON_UNSPECIFIED;
  stop_detail.clear();
  frames.clear();
  modules.clear();
  pid_ignored_reason.clear();
}

void AppendSnapshotResponse(const SampleAnswer& a, std::string* out) {
  Sizes& sizes = ThreadSizes();
  ResponseSize(a, sizes);
  const size_t at = out->size();
  out->resize(at + sizes.response);
  WriteResponse(out->data() + at, a, sizes);
}

void AppendBatchElement(const SampleAnswer& a, std::string* out) {
  Sizes& sizes = ThreadSizes();
  ResponseSize(a, sizes);
  const size_t at = out->size();
  out->resize(at + LenFieldSize(1, sizes.response));
  WriteResponse(LenHeader(out->data() + at, 1, sizes.response), a, sizes);
}

}  // namespace unwindd::service
