#include "service/server/response_encoder.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "service/common/utf8.h"

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

// A string from the target: as it is when valid UTF-8, else with each
// stray byte replaced by U+FFFD (service/common/utf8.h): proto3 strings
// must be UTF-8, or the client's parser rejects the whole answer.
size_t TextFieldSize(int field, absl::string_view s) {
  return IsUtf8(s) ? StringFieldSize(field, s) : LenFieldSize(field, Utf8LossySize(s));
}
char* TextField(char* p, int field, absl::string_view s) {
  if (IsUtf8(s)) return StringField(p, field, s);
  return WriteUtf8Lossy(LenHeader(p, field, Utf8LossySize(s)), s);
}
// The exact bytes of a string TextField had to change (Module.path_bytes,
// file_bytes); nothing when it is valid UTF-8.
size_t RawBytesFieldSize(int field, absl::string_view s) {
  return IsUtf8(s) ? 0 : StringFieldSize(field, s);
}
char* RawBytesField(char* p, int field, absl::string_view s) {
  return IsUtf8(s) ? p : StringField(p, field, s);
}

// A length-delimited field whose length is known once its body is
// written (one pass instead of sizing everything first): the length's
// varint gets the bytes that `bound`, an upper bound of the body's size,
// would need; when the real length needs fewer, the body moves down.
// Bounds are tight enough that this is rare (a stack of one frame).
template <typename Body>
char* Delimited(char* p, int field, size_t bound, Body body) {
  p = Varint(p, Tag(field, kLen));
  const size_t reserved = VarintSize(bound);
  char* const start = p + reserved;
  char* end = body(start);
  const size_t len = static_cast<size_t>(end - start);
  const size_t n = VarintSize(len);
  Varint(p, len);
  if (n < reserved) {
    std::memmove(p + n, start, len);
    end -= reserved - n;
  }
  return end;
}

// The most a varint field takes: tag (fields here are below 16) + 10.
constexpr size_t kMaxVarintField = 11;
// The most a Frame takes: five 64-bit varint fields and `module`.
constexpr size_t kMaxFrame = 5 * kMaxVarintField + 1 + 5;
static_assert(kMaxFrame < 128, "a Frame's length is one byte");

// U+FFFD is 3 bytes for one stray byte (TextField).
size_t StringBound(absl::string_view s) { return 1 + 10 + 3 * s.size(); }

// message Frame.
char* WriteFrame(char* p, const SampleAnswer::Frame& f) {
  p = VarintField(p, 1, f.pc);
  p = VarintField(p, 2, f.sp);
  p = VarintField(p, 3, FromInt32(f.method));
  // `optional uint32 module = 4`: present even when 0.
  if (f.module >= 0) p = Varint(Varint(p, Tag(4, kVarint)), f.module);
  p = VarintField(p, 5, f.rel_pc);
  return VarintField(p, 6, f.file_offset);
}

// message ThreadStack (no signal: snapshots have none).
// The bound is the frames' count times the largest any of them can be,
// from the OR of each field over all frames (a varint of the OR is at
// least as long as any of its values'): close enough to the real size
// that the length's varint has the same number of bytes, so Delimited
// does not move the frames down (~8 KiB per sample of 350 frames).
size_t StackBound(const SampleAnswer& a) {
  uint64_t pc = 0, sp = 0, rel_pc = 0, file_offset = 0;
  uint32_t method = 0, module = 0;
  for (const SampleAnswer::Frame& f : a.frames) {
    pc |= f.pc;
    sp |= f.sp;
    rel_pc |= f.rel_pc;
    file_offset |= f.file_offset;
    method |= static_cast<uint32_t>(f.method);
    if (f.module >= 0) module |= static_cast<uint32_t>(f.module);
  }
  // Per field: a one-byte tag and the value (method and module as varints
  // of up to 10 bytes: int32 and enum values are sign-extended).
  const size_t frame = 1 + VarintSize(pc) + 1 + VarintSize(sp) + 1 +
                       VarintSize(FromInt32(static_cast<int32_t>(method))) + 1 +
                       VarintSize(module) + 1 + VarintSize(rel_pc) + 1 +
                       VarintSize(file_offset);
  return 2 * kMaxVarintField + a.frames.size() * (2 + std::min(frame, kMaxFrame)) +
         StringBound(a.stop_detail);
}
char* WriteStack(char* p, const SampleAnswer& a) {
  p = VarintField(p, 1, FromInt32(a.tid));
  for (const SampleAnswer::Frame& f : a.frames) {
    // A Frame's length is one byte: written after the frame.
    *p++ = static_cast<char>(Tag(2, kLen));
    char* const len = p++;
    p = WriteFrame(p, f);
    *len = static_cast<char>(p - len - 1);
  }
  p = VarintField(p, 3, FromInt32(a.stop));
  return TextField(p, 4, a.stop_detail);
}

// message Module: its exact size (a few per sample).
size_t ModuleSize(const SampleAnswer::Module& m) {
  return TextFieldSize(1, m.path) + StringFieldSize(2, m.build_id) +
         VarintFieldSize(3, m.start) + VarintFieldSize(4, m.end) +
         VarintFieldSize(5, m.offset) + VarintFieldSize(6, m.load_bias) +
         TextFieldSize(7, m.file) + TextFieldSize(8, m.error) +
         VarintFieldSize(9, m.build_id_mismatch) + VarintFieldSize(10, m.from_memory) +
         VarintFieldSize(11, m.load_bias_unknown) + VarintFieldSize(12, m.fetched) +
         TextFieldSize(13, m.debug_file) + StringFieldSize(14, m.debug_kind) +
         VarintFieldSize(15, m.debug_fetched) + RawBytesFieldSize(16, m.path) +
         RawBytesFieldSize(17, m.file);
}
char* WriteModule(char* p, const SampleAnswer::Module& m) {
  p = TextField(p, 1, m.path);
  p = StringField(p, 2, m.build_id);
  p = VarintField(p, 3, m.start);
  p = VarintField(p, 4, m.end);
  p = VarintField(p, 5, m.offset);
  p = VarintField(p, 6, m.load_bias);
  p = TextField(p, 7, m.file);
  p = TextField(p, 8, m.error);
  p = VarintField(p, 9, m.build_id_mismatch);
  p = VarintField(p, 10, m.from_memory);
  p = VarintField(p, 11, m.load_bias_unknown);
  p = VarintField(p, 12, m.fetched);
  p = TextField(p, 13, m.debug_file);
  p = StringField(p, 14, m.debug_kind);
  p = VarintField(p, 15, m.debug_fetched);
  p = RawBytesField(p, 16, m.path);
  return RawBytesField(p, 17, m.file);
}

// message SampleError.
size_t ErrorSize(const absl::Status& s) {
  return VarintFieldSize(1, FromInt32(static_cast<int32_t>(s.code()))) +
         TextFieldSize(2, s.message());
}
char* WriteError(char* p, const absl::Status& s) {
  p = VarintField(p, 1, FromInt32(static_cast<int32_t>(s.code())));
  return TextField(p, 2, s.message());
}

// message SnapshotResponse: an upper bound of its size, with the modules'
// exact sizes (kept for the writing pass) in `module_sizes`.
size_t ResponseBound(const SampleAnswer& a, std::vector<size_t>& module_sizes) {
  size_t n = kMaxVarintField;
  if (!a.error.ok()) return n + LenFieldSize(4, ErrorSize(a.error));
  const size_t stack = StackBound(a);
  n += 1 + VarintSize(stack) + stack;
  module_sizes.resize(a.modules.size());
  for (size_t i = 0; i < a.modules.size(); ++i) {
    const SampleAnswer::Module& m = a.modules[i];
    module_sizes[i] = m.encoded != nullptr ? m.encoded->size() : ModuleSize(m);
    n += LenFieldSize(3, module_sizes[i]);
  }
  return n + StringBound(a.pid_ignored_reason);
}
char* WriteResponse(char* p, const SampleAnswer& a, const std::vector<size_t>& module_sizes) {
  p = VarintField(p, 1, a.sample_id);
  if (!a.error.ok()) return WriteError(LenHeader(p, 4, ErrorSize(a.error)), a.error);
  p = Delimited(p, 2, StackBound(a), [&a](char* q) { return WriteStack(q, a); });
  for (size_t i = 0; i < a.modules.size(); ++i) {
    const SampleAnswer::Module& m = a.modules[i];
    p = LenHeader(p, 3, module_sizes[i]);
    if (m.encoded != nullptr) {
      std::memcpy(p, m.encoded->data(), m.encoded->size());
      p += m.encoded->size();
    } else {
      p = WriteModule(p, m);
    }
  }
  return StringField(p, 5, a.pid_ignored_reason);
}

// The scratch of one thread's encodings (kept: no allocation per sample).
std::vector<size_t>& ModuleSizes() {
  thread_local std::vector<size_t> sizes;
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

std::string EncodeModule(const SampleAnswer::Module& m) {
  std::string out(ModuleSize(m), '\0');
  char* const end = WriteModule(out.data(), m);
  out.resize(static_cast<size_t>(end - out.data()));
  return out;
}

void AppendSnapshotResponse(const SampleAnswer& a, AnswerSink& out) {
  std::vector<size_t>& module_sizes = ModuleSizes();
  char* const p = out.Reserve(ResponseBound(a, module_sizes));
  out.Commit(WriteResponse(p, a, module_sizes));
}

void AppendSnapshotResponse(const SampleAnswer& a, std::string* out) {
  StringSink sink(out);
  AppendSnapshotResponse(a, sink);
}

void AppendBatchElement(const SampleAnswer& a, AnswerSink& out) {
  std::vector<size_t>& module_sizes = ModuleSizes();
  const size_t bound = ResponseBound(a, module_sizes);
  char* const p = out.Reserve(1 + VarintSize(bound) + bound);
  out.Commit(Delimited(p, 1, bound, [&](char* q) { return WriteResponse(q, a, module_sizes); }));
}

void AppendBatchElement(const SampleAnswer& a, std::string* out) {
  StringSink sink(out);
  AppendBatchElement(a, sink);
}

}  // namespace unwindd::service
