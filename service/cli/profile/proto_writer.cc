#include "service/cli/profile/proto_writer.h"

namespace unwindd::profile {

void AppendVarint(uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
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
  std::string payload;
  for (uint64_t v : values) AppendVarint(v, &payload);
  Bytes(field, payload);
}

void ProtoWriter::PackedInt64s(uint32_t field,
                               absl::Span<const int64_t> values) {
  if (values.empty()) return;
  std::string payload;
  for (int64_t v : values) AppendVarint(static_cast<uint64_t>(v), &payload);
  Bytes(field, payload);
}

}  // namespace unwindd::profile
