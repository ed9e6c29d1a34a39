// The hand encoding of snapshot responses against protobuf's own: for
// answers with every field set, with zeros (left out, except `module`,
// which has presence), with negative and 10-byte varints, errors, and as
// batch elements, the bytes must be exactly what protobuf's deterministic
// serialisation of the same message gives, and must parse back to it.
#include "service/server/response_encoder.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "service/common/utf8.h"

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

// The message the answer stands for, built with protobuf's API.
v1::SnapshotResponse AsMessage(const SampleAnswer& a) {
  v1::SnapshotResponse r;
  r.set_sample_id(a.sample_id);
  if (!a.error.ok()) {
    r.mutable_error()->set_code(static_cast<int>(a.error.code()));
    r.mutable_error()->set_message(Utf8Lossy(a.error.message()));
    return r;
  }
  v1::ThreadStack* t = r.mutable_stack();
  t->set_tid(a.tid);
  t->set_stop(a.stop);
  t->set_stop_detail(Utf8Lossy(a.stop_detail));
  for (const SampleAnswer::Frame& f : a.frames) {
    v1::Frame* pf = t->add_frames();
    pf->set_pc(f.pc);
    pf->set_sp(f.sp);
    pf->set_method(f.method);
    if (f.module >= 0) pf->set_module(f.module);
    pf->set_rel_pc(f.rel_pc);
    pf->set_file_offset(f.file_offset);
  }
  for (const SampleAnswer::Module& m : a.modules) {
    v1::Module* pm = r.add_modules();
    // Strings from the target as service/common/convert.cc sets them.
    pm->set_path(Utf8Lossy(m.path));
    if (!IsUtf8(m.path)) pm->set_path_bytes(std::string(m.path));
    pm->set_build_id(std::string(m.build_id));
    pm->set_start(m.start);
    pm->set_end(m.end);
    pm->set_offset(m.offset);
    pm->set_load_bias(m.load_bias);
    pm->set_file(Utf8Lossy(m.file));
    if (!IsUtf8(m.file)) pm->set_file_bytes(std::string(m.file));
    pm->set_error(Utf8Lossy(m.error));
    pm->set_build_id_mismatch(m.build_id_mismatch);
    pm->set_from_memory(m.from_memory);
    pm->set_load_bias_unknown(m.load_bias_unknown);
    pm->set_fetched(m.fetched);
    pm->set_debug_file(Utf8Lossy(m.debug_file));
    pm->set_debug_kind(m.debug_kind);
    pm->set_debug_fetched(m.debug_fetched);
  }
  r.set_pid_ignored_reason(a.pid_ignored_reason);
  return r;
}

void ExpectSameAsProtobuf(const SampleAnswer& a) {
  const v1::SnapshotResponse want = AsMessage(a);
  std::string got;
  AppendSnapshotResponse(a, &got);
  EXPECT_EQ(got, Deterministic(want));
  v1::SnapshotResponse parsed;
  ASSERT_TRUE(parsed.ParseFromString(got));
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(parsed, want))
      << parsed.DebugString() << "\nvs\n" << want.DebugString();

  // Twice as batch elements, after something already in the buffer.
  v1::SnapshotBatchResponse batch;
  *batch.add_responses() = want;
  *batch.add_responses() = want;
  std::string elements;
  AppendBatchElement(a, &elements);
  AppendBatchElement(a, &elements);
  EXPECT_EQ(elements, Deterministic(batch));
}

SampleAnswer Full() {
  SampleAnswer a;
  a.sample_id = 0x123456789abcdef0;
  a.tid = 4242;
  a.stop = v1::STOP_REASON_MEMORY_ERROR;
  a.stop_detail = "reading 0x7ffd0000: cannot read memory";
  a.modules.push_back({"/usr/lib/x86_64-linux-gnu/libc.so.6", "93ac61ec", 0x7f0000000000,
                       0x7f0000200000, 0x1000, 0x7f0000000000, "/srv/libc.so.6", "",
                       false, false, false, true, "/usr/lib/debug/.build-id/93/ac61ec.debug",
                       "debug", true});
  a.modules.push_back({"[vdso]", "", 0x7ffff7fc1000, 0x7ffff7fc3000, 0, 0, "",
                       "[vdso] is unreadable", true, true, true, false, "", "minidebuginfo",
                       false});
  a.frames.push_back({0x7f0000012345, 0x7ffd00001000, v1::METHOD_INITIAL, 0, 0x12345,
                      0x12345});
  a.frames.push_back({0x7ffff7fc1a00, 0x7ffd00001040, v1::METHOD_EH_FRAME, 1, 0xa00, 0xa00});
  a.frames.push_back({0x401000, 0x7ffd00001080, v1::METHOD_FRAME_POINTER, -1, 0, 0});
  a.frames.push_back({std::numeric_limits<uint64_t>::max(), 1, v1::METHOD_SIGNAL, 0,
                      std::numeric_limits<uint64_t>::max(), 1});
  a.pid_ignored_reason = "process 7 has exited";
  return a;
}

TEST(ResponseEncoderTest, EveryField) { ExpectSameAsProtobuf(Full()); }

// A target can name a file with any bytes; proto3 strings must be UTF-8
// (protobuf refuses to parse the answer otherwise): the strings carry
// U+FFFD for each stray byte, and path_bytes/file_bytes the exact paths.
TEST(ResponseEncoderTest, StringsThatAreNotUtf8) {
  SampleAnswer a = Full();
  a.stop_detail = "reading saved rip in /tmp/\xff.so";
  a.modules[0].path = "/tmp/bad\xff\xc3(dir/lib\xe9.so";
  a.modules[0].file = "/srv/\x80lib.so";
  a.modules[0].error = "/tmp/\xfe: gone";
  a.modules[0].debug_file = "/usr/lib/debug/\xf5.debug";
  ExpectSameAsProtobuf(a);
  std::string got;
  AppendSnapshotResponse(a, &got);
  v1::SnapshotResponse parsed;
  ASSERT_TRUE(parsed.ParseFromString(got));
  EXPECT_EQ(parsed.modules(0).path_bytes(), a.modules[0].path);
  EXPECT_EQ(parsed.modules(0).file_bytes(), a.modules[0].file);
  EXPECT_EQ(parsed.modules(0).path(), "/tmp/bad\xef\xbf\xbd\xef\xbf\xbd(dir/lib\xef\xbf\xbd.so");
  EXPECT_EQ(parsed.modules(1).path_bytes(), "");  // "[vdso]" is valid
  // Failed samples too.
  SampleAnswer e;
  e.sample_id = 9;
  e.error = absl::NotFoundError("no file /tmp/\xff");
  ExpectSameAsProtobuf(e);
}

// A session keeps each module's bytes (EncodeModule) and answers with
// them: the same bytes as encoding the fields, strings that are not UTF-8
// included; the fields are then not read.
TEST(ResponseEncoderTest, ModulesEncodedOnceGiveTheSameBytes) {
  SampleAnswer a = Full();
  a.modules[1].path = "/tmp/\xff.so";
  std::string direct;
  AppendSnapshotResponse(a, &direct);
  std::string direct_elements;
  AppendBatchElement(a, &direct_elements);
  std::vector<std::string> kept;
  for (const SampleAnswer::Module& m : a.modules) kept.push_back(EncodeModule(m));
  for (size_t i = 0; i < a.modules.size(); ++i) {
    a.modules[i] = SampleAnswer::Module();  // fields gone: only the bytes count
    a.modules[i].encoded = &kept[i];
  }
  std::string cached;
  AppendSnapshotResponse(a, &cached);
  EXPECT_EQ(cached, direct);
  std::string cached_elements;
  AppendBatchElement(a, &cached_elements);
  EXPECT_EQ(cached_elements, direct_elements);
}

TEST(ResponseEncoderTest, ZerosAreLeftOutButModuleZeroIsNot) {
  SampleAnswer a;
  a.frames.push_back({0, 0, v1::METHOD_UNSPECIFIED, 0, 0, 0});  // module 0: present
  a.frames.push_back({0, 0, v1::METHOD_UNSPECIFIED, -1, 0, 0});  // an empty Frame
  a.modules.emplace_back();                                      // an empty Module
  ExpectSameAsProtobuf(a);
  std::string bytes;
  AppendSnapshotResponse(a, &bytes);
  v1::SnapshotResponse parsed;
  ASSERT_TRUE(parsed.ParseFromString(bytes));
  EXPECT_TRUE(parsed.has_stack());  // present even when empty
  ASSERT_EQ(parsed.stack().frames_size(), 2);
  EXPECT_TRUE(parsed.stack().frames(0).has_module());
  EXPECT_FALSE(parsed.stack().frames(1).has_module());
}

TEST(ResponseEncoderTest, NoFrames) {
  SampleAnswer a;
  a.sample_id = 1;
  a.stop = v1::STOP_REASON_END_OF_STACK;
  ExpectSameAsProtobuf(a);
}

TEST(ResponseEncoderTest, NegativeTidIsTenBytes) {
  SampleAnswer a = Full();
  a.tid = -1;
  ExpectSameAsProtobuf(a);
}

TEST(ResponseEncoderTest, AnErrorCarriesOnlyTheSampleIdAndTheError) {
  SampleAnswer a = Full();
  a.error = absl::InvalidArgumentError("mapping table 7 was not sent on this stream");
  ExpectSameAsProtobuf(a);
  a.sample_id = 0;
  a.error = absl::ResourceExhaustedError("");
  ExpectSameAsProtobuf(a);
}

// Every varint length, 1 to 10 bytes, in every position.
TEST(ResponseEncoderTest, VarintLengths) {
  for (int bits = 0; bits <= 64; ++bits) {
    const uint64_t v = bits == 0 ? 0 : bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
    SampleAnswer a;
    a.sample_id = v;
    a.frames.push_back({v, v, v1::METHOD_EH_FRAME, static_cast<int>(v & 0x7fffffff), v, v});
    a.modules.push_back({"m", "b", v, v, v, v, "", "", false, false, false});
    ExpectSameAsProtobuf(a);
  }
}

TEST(ResponseEncoderTest, LongStringsHaveLongLengths) {
  SampleAnswer a = Full();
  a.stop_detail = std::string(200000, 'x');  // a 3-byte length
  ExpectSameAsProtobuf(a);
}

TEST(ResponseEncoderTest, ClearKeepsNothing) {
  SampleAnswer a = Full();
  a.error = absl::InternalError("x");
  a.Clear();
  std::string bytes;
  AppendSnapshotResponse(a, &bytes);
  EXPECT_EQ(bytes, Deterministic(AsMessage(SampleAnswer())));
}

}  // namespace
}  // namespace unwindd::service
