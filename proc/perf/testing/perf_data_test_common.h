// What the perf_data tests share: an EventHandler that collects what it
// is given, a sample record, and a two-round file with features (perf
// record's way of writing per-CPU buffers one after the other).
#ifndef UNWINDD_PROC_PERF_TESTING_PERF_DATA_TEST_COMMON_H_
#define UNWINDD_PROC_PERF_TESTING_PERF_DATA_TEST_COMMON_H_

#include <cstdint>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "proc/perf/perf_data.h"
#include "proc/perf/testing/perf_data_writer.h"

namespace unwindd::proc::perf::testing {

class Collect : public EventHandler {
 public:
  absl::Status OnEvent(const Event& e) override {
    types.push_back(e.type);
    times.push_back(e.id.time);
    if (e.type == kRecordSample) {
      ips.push_back(e.sample.ip);
      attr_indexes.push_back(e.attr_index);
    }
    if (e.type == kRecordMmap2) files.emplace_back(e.mmap.filename);
    return absl::OkStatus();
  }
  std::vector<uint32_t> types;
  std::vector<uint64_t> times;
  std::vector<uint64_t> ips;
  std::vector<int> attr_indexes;
  std::vector<std::string> files;
};

inline std::vector<uint8_t> Sample(const EventAttr& a, uint64_t time, uint64_t ip) {
  SampleSpec s;
  s.pid = s.tid = 1;
  s.time = time;
  s.ip = ip;
  return SampleRecord(a, s);
}

// Two rounds, out of order inside each, as perf record writes per-CPU
// buffers one after the other.
inline PerfDataWriter TwoRounds() {
  PerfDataWriter w;
  EventAttr a = DwarfCallGraphAttr();
  a.ids = {1, 2};
  w.AddAttr(a);
  w.Add(CommRecord(a, 1, 1, "prog", true, 5));
  w.Add(Sample(a, 30, 0x30));
  w.Add(Mmap2Record(a, 1, 1, 0x1000, 0x1000, 0, 5, "/bin/prog", 8));
  w.Add(Sample(a, 10, 0x10));
  w.Add(FinishedRound());
  w.Add(Sample(a, 40, 0x40));
  w.Add(Sample(a, 20, 0x20));
  w.Add(FinishedRound());
  w.Add(Sample(a, 35, 0x35));
  w.AddFeature(kFeatArch, FeatureString("x86_64"));
  w.AddFeature(kFeatHostname, FeatureString("host1"));
  w.AddFeature(kFeatOsRelease, FeatureString("6.1.0"));
  Bytes8 cmd;
  cmd.U32(2).Raw(FeatureString("perf")).Raw(FeatureString("record"));
  w.AddFeature(kFeatCmdline, cmd.bytes());
  std::vector<uint8_t> id(20, 0x11);
  Bytes8 ids;
  ids.Raw(BuildIdEvent(0, kMiscUser, -1, id, "/bin/prog"));
  ids.Raw(BuildIdEvent(0, kMiscKernel, -1, id, "[kernel.kallsyms]"));
  w.AddFeature(kFeatBuildId, ids.bytes());
  return w;
}

inline void ExpectTwoRoundsOrder(const Collect& c) {
  EXPECT_EQ(c.ips, (std::vector<uint64_t>{0x10, 0x20, 0x30, 0x35, 0x40}));
  // COMM (5) and MMAP2 (8) come before the first sample (10).
  ASSERT_GE(c.types.size(), 2u);
  EXPECT_EQ(c.types[0], kRecordComm);
  EXPECT_EQ(c.types[1], kRecordMmap2);
  for (size_t i = 1; i < c.times.size(); ++i) EXPECT_LE(c.times[i - 1], c.times[i]);
}


}  // namespace unwindd::proc::perf::testing

#endif  // UNWINDD_PROC_PERF_TESTING_PERF_DATA_TEST_COMMON_H_
