// The Protocol Buffers wire format, written by hand, so that the CLI can
// write pprof profiles without linking a protobuf library (it stays free of
// gRPC and protobuf). Only what an encoder needs: varints, tags,
// length-delimited fields, packed repeated scalars.
//
// Rules from the encoding spec (https://protobuf.dev/programming-guides/
// encoding/, "Base 128 Varints", "Message Structure", "Packed Repeated
// Fields"): a tag is the varint (field_number << 3) | wire_type; a varint is
// little-endian base 128, 7 bits per byte, high bit set on all but the last;
// `int64` is the varint of its two's complement (10 bytes when negative);
// `string`, `bytes` and sub-messages are wire type 2, a varint byte count
// then the bytes; proto3 packs repeated scalars into one wire-type-2 field.
//
//   ProtoWriter w;
//   w.Varint(1, 150);             // 08 96 01
//   ProtoWriter sub;
//   sub.Varint(1, 1);
//   w.Message(3, sub);            // 1a 02 08 01
//   std::string bytes = w.Release();
//
// Field numbers come from our own code (profile.proto's constants), never
// from input; they must be in [1, 2^29).
#ifndef UNWINDD_SERVICE_CLI_PROFILE_PROTO_WRITER_H_
#define UNWINDD_SERVICE_CLI_PROFILE_PROTO_WRITER_H_

#include <cstdint>
#include <string>
#include <utility>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace unwindd::profile {

enum class WireType : uint8_t {
  kVarint = 0,
  kFixed64 = 1,
  kLengthDelimited = 2,
  kFixed32 = 5,
};

// Appends `v` as a base-128 varint (1 to 10 bytes).
void AppendVarint(uint64_t v, std::string* out);

// Writes `v` as a varint at `p` (at most kMaxVarintBytes), returns the end:
// for a caller that packs many values into a buffer of its own.
inline constexpr size_t kMaxVarintBytes = 10;
inline char* PutVarint(char* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<char>(v);
  return p;
}

class ProtoWriter {
 public:
  // uint64, uint32, bool, enum: the value's varint.
  void Varint(uint32_t field, uint64_t v);
  // int64 (not sint64): the varint of the two's complement.
  void Int64(uint32_t field, int64_t v) {
    Varint(field, static_cast<uint64_t>(v));
  }
  void Bool(uint32_t field, bool v) { Varint(field, v ? 1 : 0); }
  // string and bytes.
  void Bytes(uint32_t field, absl::string_view bytes);
  // An embedded message, already encoded in `message`.
  void Message(uint32_t field, const ProtoWriter& message) {
    Bytes(field, message.data());
  }
  // `repeated uint64` / `repeated int64`, packed (proto3's default). Nothing
  // is written for an empty list, as protobuf itself does.
  void PackedVarints(uint32_t field, absl::Span<const uint64_t> values);
  void PackedInt64s(uint32_t field, absl::Span<const int64_t> values);

  // proto3 leaves scalars at their default (0, false) off the wire; these
  // do the same, so our bytes equal a protobuf library's for one message.
  void VarintIfNonZero(uint32_t field, uint64_t v) {
    if (v != 0) Varint(field, v);
  }
  void Int64IfNonZero(uint32_t field, int64_t v) {
    if (v != 0) Int64(field, v);
  }

  // Encoded bytes as they are: a message from pieces encoded before.
  void Raw(absl::string_view bytes) { buf_.append(bytes.data(), bytes.size()); }

  const std::string& data() const { return buf_; }
  std::string Release() { return std::exchange(buf_, std::string()); }
  void Clear() { buf_.clear(); }

 private:
  void Tag(uint32_t field, WireType type);

  std::string buf_;
};

}  // namespace unwindd::profile

#endif  // UNWINDD_SERVICE_CLI_PROFILE_PROTO_WRITER_H_
