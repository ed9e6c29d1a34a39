// The batch reader against protobuf's own parse: for well-formed batches
// split into slices every way (one slice, byte by byte, sizes that split
// fields and stacks), and for malformed ones (truncated, groups, bad
// lengths), it must give what protobuf gives, each sample's stack aside,
// and borrow the stacks that lie within one slice.
#include "service/server/batch_reader.h"

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "gtest/gtest.h"

namespace unwindd::service {
namespace {

std::string Deterministic(const google::protobuf::MessageLite& m) {
  std::string out;
  google::protobuf::io::StringOutputStream s(&out);
  google::protobuf::io::CodedOutputStream c(&s);
  c.SetSerializationDeterministic(true);
  m.SerializeToCodedStream(&c);
  c.Trim();
  return out;
}

std::vector<grpc::Slice> Split(const std::string& bytes, size_t piece) {
  std::vector<grpc::Slice> out;
  for (size_t at = 0; at < bytes.size(); at += piece) {
    const size_t n = std::min(piece, bytes.size() - at);
    out.emplace_back(bytes.data() + at, n);
  }
  return out;
}

// The batch as the reader gives it, with each stack put back.
v1::SnapshotBatch Reassembled(const ReceivedBatch& in) {
  v1::SnapshotBatch b = in.batch();
  for (int i = 0; i < b.samples_size(); ++i) {
    EXPECT_TRUE(b.samples(i).stack().empty());
    const StackCopy& s = in.stack(i);
    std::string stack(s.head.begin(), s.head.end());
    stack.append(s.tail.begin(), s.tail.end());
    b.mutable_samples(i)->set_stack(std::move(stack));
  }
  return b;
}

// Parses `bytes` split every way; each must agree with protobuf.
void ExpectSameAsProtobuf(const std::string& bytes) {
  v1::SnapshotBatch want;
  const bool ok = want.ParseFromString(bytes);
  ReceivedBatch in;  // reused across parses, as a stream does
  for (size_t piece : {bytes.size() + 1, size_t{1}, size_t{3}, size_t{7}, size_t{64},
                       size_t{1000}, size_t{4096}}) {
    SCOPED_TRACE(piece);
    ASSERT_EQ(in.Parse(Split(bytes, std::max<size_t>(piece, 1))), ok);
    if (ok) {
      EXPECT_EQ(Deterministic(Reassembled(in)), Deterministic(want));
    }
  }
}

std::string Stack(size_t n, char seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(seed + i * 7);
  return s;
}

v1::SnapshotBatch Sample3() {
  v1::SnapshotBatch b;
  v1::MappingTable* t = b.add_mapping_tables();
  t->set_id(7);
  v1::Mapping* m = t->add_mappings();
  m->set_start(0x1000);
  m->set_end(0x2000);
  m->set_path("/usr/lib/libc.so.6");
  m->set_build_id("abcd");
  m->set_image(Stack(300, 'v'));
  b.add_release_mapping_table_ids(3);
  for (int i = 0; i < 3; ++i) {
    v1::SnapshotRequest* r = b.add_samples();
    r->set_sample_id(100 + i);
    r->set_pid(42);
    r->set_tid(43 + i);
    r->set_arch(v1::ARCH_X86_64);
    r->mutable_perf_registers()->set_mask(0xff0fff);
    for (int k = 0; k < 17; ++k) r->mutable_perf_registers()->add_values(0x7ffd00000000 + k);
    r->set_stack_address(0x7ffd00001000);
    r->set_stack(Stack(i == 0 ? 0 : 5000 * i, static_cast<char>(i)));
    r->set_mapping_table_id(7);
  }
  return b;
}

TEST(ReceivedBatchTest, SameAsProtobufHoweverSplit) {
  ExpectSameAsProtobuf(Sample3().SerializeAsString());
}

TEST(ReceivedBatchTest, StacksInOneSliceAreBorrowed) {
  const std::string bytes = Sample3().SerializeAsString();
  ReceivedBatch in;
  std::vector<grpc::Slice> one = Split(bytes, bytes.size());
  const uint8_t* base = one[0].begin();
  ASSERT_TRUE(in.Parse(one));
  EXPECT_EQ(in.gathered(), 0);
  EXPECT_EQ(in.split(), 0);
  for (int i = 1; i < 3; ++i) {
    EXPECT_GE(in.stack(i).head.data(), base);
    EXPECT_LE(in.stack(i).head.data() + in.stack(i).size(), base + bytes.size());
    EXPECT_TRUE(in.stack(i).tail.empty());
  }
  ASSERT_TRUE(in.Parse(Split(bytes, 4096)));
  EXPECT_GT(in.gathered(), 0);  // 5000 and 10000 bytes span three slices
}

// A stack that runs on from one slice into the next is borrowed in two
// pieces, each where it lies.
TEST(ReceivedBatchTest, StacksSplitInTwoAreBorrowedInTwoPieces) {
  const std::string bytes = Sample3().SerializeAsString();
  const std::string last = Stack(10000, 2);
  const size_t at = bytes.find(last);
  ASSERT_NE(at, std::string::npos);
  for (size_t cut : {at + 1, at + 1234, at + last.size() - 1}) {
    std::vector<grpc::Slice> two;
    two.emplace_back(bytes.data(), cut);
    two.emplace_back(bytes.data() + cut, bytes.size() - cut);
    const uint8_t* first = two[0].begin();
    const uint8_t* second = two[1].begin();
    ReceivedBatch in;
    ASSERT_TRUE(in.Parse(two));
    EXPECT_EQ(in.split(), 1);
    EXPECT_EQ(in.gathered(), 0);
    const StackCopy& c = in.stack(2);
    EXPECT_EQ(c.head.data(), first + at);
    EXPECT_EQ(c.head.size(), cut - at);
    EXPECT_EQ(c.tail.data(), second);
    EXPECT_EQ(c.size(), last.size());
    EXPECT_EQ(std::string(c.head.begin(), c.head.end()) +
                  std::string(c.tail.begin(), c.tail.end()),
              last);
  }
}

TEST(ReceivedBatchTest, EmptyAndSamplesOnly) {
  ExpectSameAsProtobuf("");
  v1::SnapshotBatch b;
  b.add_samples();  // an empty sample
  b.add_samples()->set_stack("x");
  ExpectSameAsProtobuf(b.SerializeAsString());
}

TEST(ReceivedBatchTest, TheLastOfTwoStacksCounts) {
  v1::SnapshotRequest first, second;
  first.set_stack(Stack(40, 'a'));
  first.set_tid(1);
  second.set_stack(Stack(30, 'b'));
  const std::string sample = first.SerializeAsString() + second.SerializeAsString();
  v1::SnapshotBatch b;
  ASSERT_TRUE(b.ParseFromString("\x0a" + std::string(1, static_cast<char>(sample.size())) +
                                sample));
  ASSERT_EQ(b.samples(0).stack(), Stack(30, 'b'));
  ExpectSameAsProtobuf(b.SerializeAsString());
  ExpectSameAsProtobuf("\x0a" + std::string(1, static_cast<char>(sample.size())) + sample);
}

TEST(ReceivedBatchTest, UnknownFieldsAndWireTypesAreProtobufs) {
  std::string bytes = Sample3().SerializeAsString();
  // An unknown varint, fixed64, fixed32 and string field at the top level,
  // `samples` with the wrong wire type, and a stack that is a varint.
  bytes += std::string("\xc8\x3e\x05", 3);                 // field 1001, varint
  bytes += std::string("\xc9\x3e") + std::string(8, 'q');  // fixed64
  bytes += std::string("\xcd\x3e") + std::string(4, 'r');  // fixed32
  bytes += std::string("\xca\x3e\x02hi", 5);               // string
  bytes += std::string("\x08\x01", 2);                     // samples as a varint
  std::string sample = "\x40\x07";                         // stack as a varint
  sample += std::string("\xfa\x3e\x01z", 4);               // unknown field in a sample
  bytes += "\x0a" + std::string(1, static_cast<char>(sample.size())) + sample;
  ExpectSameAsProtobuf(bytes);
}

TEST(ReceivedBatchTest, MalformedIsWhatProtobufSays) {
  const std::string bytes = Sample3().SerializeAsString();
  // Every truncation: mostly refused, sometimes a valid shorter message.
  for (size_t n = 0; n < bytes.size(); n += 97) {
    SCOPED_TRACE(n);
    ExpectSameAsProtobuf(bytes.substr(0, n));
  }
  // A group (wire type 3/4) at the top level and in a sample.
  ExpectSameAsProtobuf(bytes + std::string("\xcb\x3e\x08\x01\xcc\x3e", 6));
  ExpectSameAsProtobuf(std::string("\x0a\x06\xcb\x3e\x08\x01\xcc\x3e", 8));
  // A sample's length past the end, a stack's past its sample's, an
  // overlong varint, field number 0.
  ExpectSameAsProtobuf(std::string("\x0a\x7f\x08\x01", 4));
  ExpectSameAsProtobuf(std::string("\x0a\x03\x42\x05x\x08\x01", 7));
  ExpectSameAsProtobuf(std::string("\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 12));
  ExpectSameAsProtobuf(std::string("\x00\x01", 2));
  // A sample that is not a SnapshotRequest (invalid UTF-8 in a string).
  v1::SnapshotRequest r;
  r.set_sysroot("ok");
  std::string sample = r.SerializeAsString();
  sample[sample.size() - 1] = '\xff';
  ExpectSameAsProtobuf("\x0a" + std::string(1, static_cast<char>(sample.size())) + sample);
}

// Random damage to a real batch (a byte changed, bytes cut out or
// repeated), split at random: the reader must still agree with protobuf.
TEST(ReceivedBatchTest, DamagedBatchesAreWhatProtobufSays) {
  const std::string good = Sample3().SerializeAsString();
  std::mt19937 rng(25);
  ReceivedBatch in;
  int parsed = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string bytes = good;
    for (int k = 0, n = 1 + rng() % 3; k < n; ++k) {
      const size_t at = rng() % bytes.size();
      switch (rng() % 3) {
        case 0:
          bytes[at] = static_cast<char>(rng());
          break;
        case 1:
          bytes.erase(at, 1 + rng() % 8);
          break;
        case 2:
          bytes.insert(at, bytes.substr(at, 1 + rng() % 8));
          break;
      }
      if (bytes.empty()) bytes = good;
    }
    v1::SnapshotBatch want;
    const bool ok = want.ParseFromString(bytes);
    parsed += ok;
    ASSERT_EQ(in.Parse(Split(bytes, 1 + rng() % 5000)), ok) << round;
    if (ok) {
      ASSERT_EQ(Deterministic(Reassembled(in)), Deterministic(want)) << round;
    }
  }
  EXPECT_GT(parsed, 100);  // the damage leaves some batches valid
}

}  // namespace
}  // namespace unwindd::service
