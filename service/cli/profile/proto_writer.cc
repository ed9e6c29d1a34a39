#include "service/cli/profile/proto_writer.h"

#include <bit>

namespace unwindd::profile {
namespace {

size_t VarintSize(uint64_t v) {
  return (static_cast<size_t>(std::bit_width(v | 1)) + 6) / 7;
}

char* PutVarint(char* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<char>(v);
  return p;
}

}  // namespace

void AppendVarint(uint64_t v, std::string* out) {
  char bytes[10];
  out->append(bytes, PutVarint(bytes, v));
}

void ProtoWriter::Tag(uint32_t field, WireType type) {
  AppendVarint(
      (static_cast<uint64_t>(field) << 3) | static_cast<uint64_t>(type), &buf_);
}

void ProtoWriter::Varint(uint32_t field, uint64_t v) {
  Tag(field, WireType::kVarint);
  AppendVarint(v, &buf_);
}

void ProtoWriter::Bytes(uint32_t field, absl::string_view bytes) {
  Tag(field, WireType::kLengthDelimited);
  AppendVarint(bytes.size(), &buf_);
  buf_.append(bytes.data(), bytes.size());
}

void ProtoWriter::PackedVarints(uint32_t field,
                                absl::Span<const uint64_t> values) {
  if (values.empty()) return;
  // Sized first, then written in place: a sample's location ids, dozens
  // a sample, without a buffer of their own.
  size_t n = 0;
  for (uint64_t v : values) n += VarintSize(v);
  Tag(field, WireType::kLengthDelimited);
  AppendVarint(n, &buf_);
  const size_t at = buf_.size();
  buf_.resize(at + n);
  char* p = buf_.data() + at;
  for (uint64_t v : values) p = PutVarint(p, v);
}

void ProtoWriter::PackedInt64s(uint32_t field,
                               absl::Span<const int64_t> values) {
  if (values.empty()) return;
  std::string payload;
  for (int64_t v : values) AppendVarint(static_cast<uint64_t>(v), &payload);
  Bytes(field, payload);
}

}  // namespace unwindd::profile
