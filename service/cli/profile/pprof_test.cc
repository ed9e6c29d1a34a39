// EncodePprof byte for byte on a tiny profile, and a round trip: our output
// decoded back by a minimal wire-format reader written here from the
// encoding spec (not from proto_writer.cc), then compared with what went in.
// pprof_go_tool_test.cc checks the same against `go tool pprof`.
#include "service/cli/profile/pprof.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/escaping.h"
#include "absl/types/span.h"
#include "gtest/gtest.h"
#include "memory/byte_reader.h"
#include "service/cli/profile/gzip.h"
#include "service/cli/profile/profile.h"

namespace unwindd::profile {
namespace {

namespace f = pprof_field;

// One field of a message as it is on the wire.
struct WireField {
  uint32_t number = 0;
  int type = 0;         // 0 varint, 2 length-delimited (the only two used)
  uint64_t varint = 0;  // type 0
  std::string bytes;    // type 2
};

absl::Span<const uint8_t> AsBytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

// Decodes one message's fields, in wire order. Varints are ULEB128 (the
// encoding guide: "base 128 varints" are exactly unsigned LEB128).
std::vector<WireField> Fields(const std::string& message) {
  std::vector<WireField> out;
  memory::ByteReader r(AsBytes(message));
  while (!r.AtEnd()) {
    absl::StatusOr<uint64_t> tag = r.ULEB128();
    EXPECT_TRUE(tag.ok()) << tag.status();
    if (!tag.ok()) return out;
    WireField fd;
    fd.number = static_cast<uint32_t>(*tag >> 3);
    fd.type = static_cast<int>(*tag & 7);
    if (fd.type == 0) {
      absl::StatusOr<uint64_t> v = r.ULEB128();
      EXPECT_TRUE(v.ok());
      fd.varint = v.value_or(0);
    } else if (fd.type == 2) {
      absl::StatusOr<uint64_t> n = r.ULEB128();
      absl::StatusOr<absl::Span<const uint8_t>> b =
          n.ok() ? r.Bytes(*n) : n.status();
      EXPECT_TRUE(b.ok()) << b.status();
      if (!b.ok()) return out;
      fd.bytes.assign(reinterpret_cast<const char*>(b->data()), b->size());
    } else {
      ADD_FAILURE() << "unexpected wire type " << fd.type;
      return out;
    }
    out.push_back(std::move(fd));
  }
  return out;
}

std::vector<uint64_t> Packed(const std::string& bytes) {
  std::vector<uint64_t> out;
  memory::ByteReader r(AsBytes(bytes));
  while (!r.AtEnd()) out.push_back(r.ULEB128().value_or(~0ull));
  return out;
}

// The fields of one message by number (last one wins for scalars).
std::map<uint32_t, WireField> ByNumber(const std::string& message) {
  std::map<uint32_t, WireField> out;
  for (WireField& fd : Fields(message)) out[fd.number] = std::move(fd);
  return out;
}

// What a consumer sees, resolved through ids and the string table.
struct DecodedFrame {
  uint64_t address;
  std::string mapping_file;  // "" without a mapping
  bool operator==(const DecodedFrame&) const = default;
};
struct DecodedSample {
  std::vector<DecodedFrame> frames;  // leaf first
  std::vector<int64_t> values;
  std::map<std::string, std::string> labels;  // numeric ones as decimal
  bool operator==(const DecodedSample&) const = default;
};
struct DecodedMapping {
  uint64_t start = 0, limit = 0, offset = 0;
  std::string file, build_id;
  bool has_any_symbol_flag = false;
};
struct Decoded {
  std::vector<std::string> strings;
  std::vector<std::string> sample_types;  // "type/unit"
  std::string period_type, default_sample_type;
  int64_t period = 0, time_nanos = 0, duration_nanos = 0;
  std::vector<std::string> comments;
  std::vector<DecodedSample> samples;
  std::map<uint64_t, DecodedMapping> mappings;  // by id
  std::vector<std::string> mapping_files;       // in wire order
  std::vector<uint32_t> field_order;            // top-level field numbers
};

Decoded Decode(const std::string& message) {
  Decoded d;
  std::vector<WireField> top = Fields(message);
  for (const WireField& fd : top) {
    d.field_order.push_back(fd.number);
    if (fd.number == f::kStringTable) d.strings.push_back(fd.bytes);
  }
  auto str = [&](uint64_t i) {
    return i < d.strings.size() ? d.strings[i] : "<bad index>";
  };
  auto value_type = [&](const std::string& m) {
    auto vt = ByNumber(m);
    return str(vt[f::kValueTypeType].varint) + "/" +
           str(vt[f::kValueTypeUnit].varint);
  };
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> locations;  // id->addr,map
  for (const WireField& fd : top) {
    if (fd.number == f::kMapping) {
      auto m = ByNumber(fd.bytes);
      DecodedMapping dm{m[f::kMappingMemoryStart].varint,
                        m[f::kMappingMemoryLimit].varint,
                        m[f::kMappingFileOffset].varint,
                        str(m[f::kMappingFilename].varint),
                        str(m[f::kMappingBuildId].varint),
                        m.count(f::kMappingHasFunctions) +
                                m.count(f::kMappingHasFilenames) +
                                m.count(f::kMappingHasLineNumbers) +
                                m.count(f::kMappingHasInlineFrames) >
                            0};
      d.mapping_files.push_back(dm.file);
      EXPECT_TRUE(d.mappings.emplace(m[f::kMappingId].varint, dm).second);
    } else if (fd.number == f::kLocation) {
      auto l = ByNumber(fd.bytes);
      EXPECT_EQ(l.count(f::kLocationLine), 0u);
      locations[l[f::kLocationId].varint] = {l[f::kLocationAddress].varint,
                                             l[f::kLocationMappingId].varint};
    }
  }
  for (const WireField& fd : top) {
    switch (fd.number) {
      case f::kSampleType:
        d.sample_types.push_back(value_type(fd.bytes));
        break;
      case f::kPeriodType:
        d.period_type = value_type(fd.bytes);
        break;
      case f::kPeriod:
        d.period = static_cast<int64_t>(fd.varint);
        break;
      case f::kTimeNanos:
        d.time_nanos = static_cast<int64_t>(fd.varint);
        break;
      case f::kDurationNanos:
        d.duration_nanos = static_cast<int64_t>(fd.varint);
        break;
      case f::kDefaultSampleType:
        d.default_sample_type = str(fd.varint);
        break;
      case f::kComment:
        for (uint64_t i : Packed(fd.bytes)) d.comments.push_back(str(i));
        break;
      case f::kSample: {
        DecodedSample s;
        for (const WireField& sf : Fields(fd.bytes)) {
          if (sf.number == f::kSampleLocationId) {
            for (uint64_t id : Packed(sf.bytes)) {
              auto it = locations.find(id);
              EXPECT_NE(it, locations.end()) << "location id " << id;
              if (it == locations.end()) continue;
              const uint64_t map_id = it->second.second;
              s.frames.push_back(
                  {it->second.first,
                   map_id == 0 ? "" : d.mappings.at(map_id).file});
            }
          } else if (sf.number == f::kSampleValue) {
            for (uint64_t v : Packed(sf.bytes)) {
              s.values.push_back(static_cast<int64_t>(v));
            }
          } else if (sf.number == f::kSampleLabel) {
            auto l = ByNumber(sf.bytes);
            s.labels[str(l[f::kLabelKey].varint)] =
                l.count(f::kLabelStr) ? str(l[f::kLabelStr].varint)
                                      : std::to_string(static_cast<int64_t>(
                                            l[f::kLabelNum].varint));
          }
        }
        d.samples.push_back(std::move(s));
        break;
      }
    }
  }
  return d;
}

std::string Hex(const std::string& bytes) {
  return absl::BytesToHexString(bytes);
}

TEST(PprofTest, TinyProfileByteForByte) {
  Profile p;
  const int m = *p.AddModule(
      {.path = "/a", .build_id = "AB", .start = 0x1000, .limit = 0x2000});
  const Frame frame[] = {{.address = 0x1234, .module = m}};
  ASSERT_TRUE(p.AddSample({.pid = 5, .comm = "x"}, frame, {},
                          {.count = 1, .weight = 10})
                  .ok());
  // Strings: 0 "", 1 samples, 2 count, 3 cpu, 4 nanoseconds, 5 pid,
  // 6 comm, 7 x, 8 /a, 9 ab.
  const std::string want =
      "0a0408011002"                // sample_type {type 1, unit 2}
      "0a0408031004"                // sample_type {type 3, unit 4}
      "1213"                        // sample, 19 bytes:
      "0a0101"                      //   location_id [1]
      "1202010a"                    //   value [1, 10]
      "1a0408051805"                //   label {key 5 (pid), num 5}
      "1a0408061007"                //   label {key 6 (comm), str 7 (x)}
      "1a0c"                        // mapping, 12 bytes:
      "0801108020188040"            //   id 1, start 0x1000, limit 0x2000
      "28083009"                    //   filename 8, build_id 9
      "2207"                        // location, 7 bytes:
      "0801100118b424"              //   id 1, mapping 1, address 0x1234
      "3200"                        // string_table: ""
      "320773616d706c6573"          //   samples
      "3205636f756e74"              //   count
      "3203637075"                  //   cpu
      "320b6e616e6f7365636f6e6473"  //   nanoseconds
      "3203706964"                  //   pid
      "3204636f6d6d"                //   comm
      "320178"                      //   x
      "32022f61"                    //   /a
      "32026162"                    //   ab (the build-id, as text)
      "5a0408031004"                // period_type {cpu, nanoseconds}
      "7003";                       // default_sample_type 3 (cpu)
  EXPECT_EQ(Hex(EncodePprof(p)), want);
}

// pprof takes the first mapping for the program (`File:` in its reports):
// that is the executable in most samples, not the first module a sample
// used (ld.so, libc), nor a program that only started it (timeout).
TEST(PprofTest, TheProgramIsTheFirstMapping) {
  Profile p;
  const int ld = *p.AddModule({.path = "/lib64/ld-linux-x86-64.so.2", .start = 0x7000,
                               .limit = 0x8000});
  const int libc = *p.AddModule({.path = "/lib/libc.so.6", .start = 0x5000, .limit = 0x6000});
  const int timeout = *p.AddModule({.path = "/usr/bin/timeout", .start = 0x3000,
                                    .limit = 0x4000});
  const int vdso = *p.AddModule({.path = "[vdso]", .start = 0x9000, .limit = 0x9100});
  const int jit = *p.AddModule({.path = "/tmp/perf-7.map", .start = 0xa000,
                                .limit = 0xb000});
  const int prog = *p.AddModule({.path = "/srv/app/bin/server", .start = 0x1000,
                                 .limit = 0x2000});
  const int lib = *p.AddModule({.path = "/srv/app/lib/libapp.so.1.2", .start = 0xc000,
                                .limit = 0xd000});
  const Frame start[] = {{.address = 0x7010, .module = ld}};
  const Frame wrapper[] = {{.address = 0x5010, .module = libc},
                           {.address = 0x3010, .return_address = true, .module = timeout}};
  const Frame work[] = {{.address = 0x9010, .module = vdso},
                        {.address = 0xa010, .return_address = true, .module = jit},
                        {.address = 0xc010, .return_address = true, .module = lib},
                        {.address = 0x1010, .return_address = true, .module = prog}};
  ASSERT_TRUE(p.AddSample({.pid = 1}, start, {}, {.count = 1, .weight = 1}).ok());
  ASSERT_TRUE(p.AddSample({.pid = 1}, wrapper, {}, {.count = 1, .weight = 1}).ok());
  ASSERT_TRUE(p.AddSample({.pid = 2}, work, {}, {.count = 5, .weight = 5}).ok());
  const Decoded d = Decode(EncodePprof(p));
  ASSERT_EQ(d.mapping_files.size(), 7u);
  EXPECT_EQ(d.mapping_files[0], "/srv/app/bin/server");
  EXPECT_EQ(d.mappings.at(1).file, "/srv/app/bin/server");
  // The rest keep their order; every location keeps its own mapping.
  EXPECT_EQ(d.mapping_files[1], "/lib64/ld-linux-x86-64.so.2");
  EXPECT_EQ(d.mapping_files[6], "/srv/app/lib/libapp.so.1.2");
  ASSERT_EQ(d.samples.size(), 3u);
  for (const DecodedSample& s : d.samples) {
    if (s.frames.size() == 4) {
      EXPECT_EQ(s.frames[3].mapping_file, "/srv/app/bin/server");
      EXPECT_EQ(s.frames[2].mapping_file, "/srv/app/lib/libapp.so.1.2");
    }
  }
  // With no program among them, the order is the modules'.
  Profile only_libs;
  const int a = *only_libs.AddModule({.path = "/lib/liba.so", .start = 0x1000, .limit = 0x2000});
  const int b = *only_libs.AddModule({.path = "[vdso]", .start = 0x3000, .limit = 0x4000});
  const Frame ab[] = {{.address = 0x1010, .module = a},
                      {.address = 0x3010, .return_address = true, .module = b}};
  ASSERT_TRUE(only_libs.AddSample({.pid = 1}, ab, {}, {.count = 1, .weight = 1}).ok());
  EXPECT_EQ(Decode(EncodePprof(only_libs)).mapping_files,
            (std::vector<std::string>{"/lib/liba.so", "[vdso]"}));
}

TEST(PprofTest, RoundTrip) {
  Profile p({"cpu-clock", "nanoseconds"});
  const int exe = *p.AddModule({.path = "/bin/demo",
                                .build_id = "0011AABB",
                                .start = 0x555555555000,
                                .limit = 0x555555556000,
                                .file_offset = 0x1000});
  const int vdso =
      *p.AddModule({.path = "[vdso]", .start = 0x7fff000, .limit = 0x7fff2000});
  const int gone = *p.AddModule({.path = "/lib/gone.so",
                                 .build_id = "ff",
                                 .start = 0x7f0000000000,
                                 .limit = 0x7f0000010000,
                                 .file_offset = 0x2000,
                                 .file_found = false});
  ASSERT_TRUE(p.AddModule({.path = "/unused", .start = 1, .limit = 2}).ok());
  const Frame s1[] = {
      {.address = 0x7fff0100, .module = vdso},
      {.address = 0x555555555235, .return_address = true, .module = exe},
      {.address = 0x99, .return_address = true}};
  const Frame s2[] = {
      {.address = 0x7f0000000010, .module = gone},
      {.address = 0x555555555235, .return_address = true, .module = exe}};
  const Frame kernel[] = {
      {.address = 0xffffffff81000010},
      {.address = 0xffffffff81000100, .return_address = true}};
  ASSERT_TRUE(p.AddSample({.pid = 10, .tid = 11, .comm = "demo"}, s1, {},
                          {.count = 2, .weight = 2000000})
                  .ok());
  ASSERT_TRUE(p.AddSample({.pid = 10, .tid = 12}, s2, kernel,
                          {.count = 1, .weight = 1000000})
                  .ok());
  ASSERT_TRUE(p.AddSample({.pid = 10, .tid = 11, .comm = "demo"}, s1, {},
                          {.count = 1, .weight = 1000000})
                  .ok());

  absl::StatusOr<std::string> gz =
      WritePprof(p, {.time_nanos = 1700000000123456789,
                     .duration_nanos = 5000000000,
                     .period = 1000000,
                     .comments = {"unwind perf perf.data"}});
  ASSERT_TRUE(gz.ok()) << gz.status();
  absl::StatusOr<std::string> raw = GzipDecompress(*gz, 1 << 20);
  ASSERT_TRUE(raw.ok()) << raw.status();
  EXPECT_EQ(*raw, EncodePprof(p, {.time_nanos = 1700000000123456789,
                                  .duration_nanos = 5000000000,
                                  .period = 1000000,
                                  .comments = {"unwind perf perf.data"}}));
  const Decoded d = Decode(*raw);

  ASSERT_FALSE(d.strings.empty());
  EXPECT_EQ(d.strings[0], "");
  // Every string once.
  EXPECT_EQ(std::set<std::string>(d.strings.begin(), d.strings.end()).size(),
            d.strings.size());
  // Top-level fields in field-number order, as protobuf writes them.
  EXPECT_TRUE(std::is_sorted(d.field_order.begin(), d.field_order.end()));
  EXPECT_EQ(d.sample_types, (std::vector<std::string>{
                                "samples/count", "cpu-clock/nanoseconds"}));
  EXPECT_EQ(d.period_type, "cpu-clock/nanoseconds");
  EXPECT_EQ(d.default_sample_type, "cpu-clock");
  EXPECT_EQ(d.period, 1000000);
  EXPECT_EQ(d.time_nanos, 1700000000123456789);
  EXPECT_EQ(d.duration_nanos, 5000000000);
  EXPECT_EQ(d.comments, (std::vector<std::string>{
                            "unwind perf perf.data",
                            "file not found: /lib/gone.so build-id ff"}));

  ASSERT_EQ(d.samples.size(), 2u);
  EXPECT_EQ(
      d.samples[0],
      (DecodedSample{
          {{0x7fff0100, "[vdso]"}, {0x555555555234, "/bin/demo"}, {0x98, ""}},
          {3, 3000000},
          {{"pid", "10"}, {"tid", "11"}, {"comm", "demo"}}}));
  EXPECT_EQ(d.samples[1],
            (DecodedSample{{{0xffffffff81000010, "[kernel.kallsyms]"},
                            {0xffffffff810000ff, "[kernel.kallsyms]"},
                            {0x7f0000000010, "/lib/gone.so"},
                            {0x555555555234, "/bin/demo"}},
                           {1, 1000000},
                           {{"pid", "10"}, {"tid", "12"}}}));

  // Only the mappings some location uses, ids 1.., all fields kept.
  ASSERT_EQ(d.mappings.size(), 4u);
  const DecodedMapping& m1 = d.mappings.at(1);
  EXPECT_EQ(m1.file, "/bin/demo");
  EXPECT_EQ(m1.build_id, "0011aabb");
  EXPECT_EQ(m1.start, 0x555555555000u);
  EXPECT_EQ(m1.limit, 0x555555556000u);
  EXPECT_EQ(m1.offset, 0x1000u);
  EXPECT_EQ(d.mappings.at(2).file, "[vdso]");
  EXPECT_EQ(d.mappings.at(2).build_id, "");
  EXPECT_EQ(d.mappings.at(3).offset, 0x2000u);
  const DecodedMapping& k = d.mappings.at(4);
  EXPECT_EQ(k.file, "[kernel.kallsyms]");
  EXPECT_EQ(k.start, 0xffffffff81000010u);
  EXPECT_EQ(k.limit, 0xffffffff81000100u);
  for (const auto& [id, m] : d.mappings) {
    EXPECT_FALSE(m.has_any_symbol_flag) << id;
  }
}

// A profile whose encoding is many of the pieces WritePprof compresses as
// it goes (64 KiB): the file holds exactly EncodePprof's bytes, and every
// sample decodes to the stack and labels it was added with.
TEST(PprofTest, LargeProfileInPieces) {
  Profile p;
  absl::StatusOr<int> exe = p.AddModule(
      {.path = "/usr/bin/big", .start = 0x400000, .limit = 0x800000});
  ASSERT_TRUE(exe.ok());
  std::vector<DecodedSample> want;
  for (int i = 0; i < 3000; ++i) {
    // Stacks of 20 to 60 frames that share their outer frames, distinct
    // at the leaf.
    std::vector<Frame> stack;
    const int depth = 20 + i % 41;
    for (int d = 0; d < depth; ++d) {
      const uint64_t pc = d == 0 ? 0x400000 + 16 * static_cast<uint64_t>(i)
                                 : 0x500000 + 8 * static_cast<uint64_t>(depth - d);
      stack.push_back({.address = pc, .return_address = d > 0, .module = *exe});
    }
    ASSERT_TRUE(p.AddSample({.pid = 1, .tid = 2 + i % 7, .comm = "big"}, stack, {},
                            {.count = 1, .weight = 1000})
                    .ok());
    DecodedSample w;
    for (const Frame& f : stack) w.frames.push_back({f.LookupAddress(), "/usr/bin/big"});
    w.values = {1, 1000};
    w.labels = {{"pid", "1"}, {"tid", absl::StrCat(2 + i % 7)}, {"comm", "big"}};
    want.push_back(w);
  }
  const std::string raw = EncodePprof(p);
  ASSERT_GT(raw.size(), size_t{3} << 16);  // several pieces
  absl::StatusOr<std::string> gz = WritePprof(p);
  ASSERT_TRUE(gz.ok()) << gz.status();
  absl::StatusOr<std::string> back = GzipDecompress(*gz, 1 << 24);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, raw);
  EXPECT_EQ(Decode(raw).samples, want);
}

// A recording of two events: a value column per event, each sample's
// weight in its event's, the same stack twice when both events hit it.
TEST(PprofTest, SeveralEventsWeighInTheirOwnColumns) {
  Profile p(EventValueType("page-faults"));
  absl::StatusOr<int> exe = p.AddModule({.path = "/bin/prog", .start = 0x1000, .limit = 0x2000});
  ASSERT_TRUE(exe.ok());
  const Frame stack[] = {{.address = 0x1100, .module = *exe}};
  ASSERT_TRUE(p.AddSample({.pid = 1, .tid = 1, .comm = "prog", .event = "page-faults"}, stack,
                          {}, {.count = 1, .weight = 3})
                  .ok());
  ASSERT_TRUE(p.AddSample({.pid = 1, .tid = 1, .comm = "prog", .event = "cpu-clock"}, stack, {},
                          {.count = 1, .weight = 250000})
                  .ok());
  ASSERT_TRUE(p.AddSample({.pid = 1, .tid = 1, .comm = "prog", .event = "task-clock"}, stack,
                          {}, {.count = 1, .weight = 1000})
                  .ok());
  ASSERT_TRUE(p.AddSample({.pid = 1, .tid = 1, .comm = "prog", .event = "page-faults"}, stack,
                          {}, {.count = 2, .weight = 5})
                  .ok());
  const Decoded d = Decode(EncodePprof(p));
  // cpu-clock and task-clock are both cpu/nanoseconds: one column.
  EXPECT_EQ(d.sample_types, (std::vector<std::string>{"samples/count", "page-faults/count",
                                                      "cpu/nanoseconds"}));
  EXPECT_EQ(d.default_sample_type, "page-faults");
  EXPECT_EQ(d.period_type, "page-faults/count");
  ASSERT_EQ(d.samples.size(), 3u);
  EXPECT_EQ(d.samples[0].values, (std::vector<int64_t>{3, 8, 0}));
  EXPECT_EQ(d.samples[1].values, (std::vector<int64_t>{1, 0, 250000}));
  EXPECT_EQ(d.samples[2].values, (std::vector<int64_t>{1, 0, 1000}));
  // The event is a column, not a label.
  EXPECT_EQ(d.samples[0].labels.count("event"), 0u);
}

TEST(PprofTest, EmptyProfile) {
  Profile p;
  const Decoded d = Decode(EncodePprof(p));
  EXPECT_EQ(d.strings, (std::vector<std::string>{"", "samples", "count", "cpu",
                                                 "nanoseconds"}));
  EXPECT_TRUE(d.samples.empty());
  EXPECT_TRUE(d.mappings.empty());
  EXPECT_EQ(d.default_sample_type, "cpu");
}

}  // namespace
}  // namespace unwindd::profile
