#include "service/cli/profile/proto_writer.h"

#include <bit>

namespace unwindd::profile {
namespace {

size_t VarintSize(uint64_t v) {
  return (static_cast<size_t>(std::bit_width(v | 1)) + 6) / 7;
}

}  // namespace

void AppendVarint(uint64_t v, std::string* out) {
  char bytes[kMaxVarintBytes];
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

namespace {

// A packed list, sized first and then written in place: a sample's
// location ids, dozens a sample, without a buffer of their own.
template <typename T>
void AppendPacked(absl::Span<const T> values, std::string& buf) {
  size_t n = 0;
  for (T v : values) n += VarintSize(static_cast<uint64_t>(v));
  AppendVarint(n, &buf);
  const size_t at = buf.size();
  buf.resize(at + n);
  char* p = buf.data() + at;
  for (T v : values) p = PutVarint(p, static_cast<uint64_t>(v));
}

}  // namespace

void ProtoWriter::PackedVarints(uint32_t field,
                                absl::Span<const uint64_t> values) {
  if (values.empty()) return;
  Tag(field, WireType::kLengthDelimited);
  AppendPacked(values, buf_);
}

void ProtoWriter::PackedInt64s(uint32_t field,
                               absl::Span<const int64_t> values) {
  if (values.empty()) return;
  Tag(field, WireType::kLengthDelimited);
  AppendPacked(values, buf_);
}

}  // namespace unwindd::profile
