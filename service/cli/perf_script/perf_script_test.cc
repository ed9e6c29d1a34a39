#include "service/cli/perf_script/perf_script.h"

#include <vector>

#include "gtest/gtest.h"

namespace unwindd::cli {
namespace {

using unwinder::Frame;
using unwinder::Method;

proc::Mapping M(uint64_t start, uint64_t end, uint64_t offset, const std::string& path) {
  proc::Mapping m;
  m.start = start;
  m.end = end;
  m.offset = offset;
  m.path = path;
  return m;
}

TEST(PerfScriptHeader, AsPerf61PrintsIt) {
  PerfScriptHeader h;
  h.comm = "busy";
  h.tid = 25068;
  h.time_ns = 539397690123;
  h.period = 250000;
  h.event = "cpu-clock";
  // Byte for byte what `perf script` printed for this sample.
  EXPECT_EQ(FormatPerfScriptHeader(h), "busy 25068   539.397690:     250000 cpu-clock: \n");
  h.tid = 7;
  h.cpu = 1;
  h.time_ns = 5000;
  EXPECT_EQ(FormatPerfScriptHeader(h), "busy     7 [001]     0.000005:     250000 cpu-clock: \n");
}

TEST(PerfScriptFrames, AddressesAsPerfPrintsThem) {
  const std::vector<proc::Mapping> maps = {
      M(0x555555554000, 0x555555555000, 0, "/bin/prog"),
      M(0x555555555000, 0x555555556000, 0x1000, "/bin/prog"),
      M(0x7f0000000000, 0x7f0000100000, 0x26000, "/lib/libc.so.6"),
      M(0x7f1000000000, 0x7f1000001000, 0, "//anon"),
      M(0x7ffff7fc1000, 0x7ffff7fc3000, 0, "[vdso]"),
  };
  unwinder::ThreadStack t;
  t.frames = {
      {0x555555555123, 0, Method::kInitial},         // frame 0: exact
      {0x7f0000000100, 0, Method::kEhFrame},         // caller: minus 1
      {0x7ffff7fc1b46, 0, Method::kSignal},          // interrupted: exact
      {0x7f1000000010, 0, Method::kFramePointer},    // anon: unconverted
      {0x1234, 0, Method::kFramePointer},            // outside every mapping
  };
  EXPECT_EQ(FormatPerfScriptFrames(t, maps),
            "\t            1123 [unknown] (/bin/prog)\n"
            "\t           260ff [unknown] (/lib/libc.so.6)\n"
            "\t             b46 [unknown] ([vdso])\n"
            "\t    7f100000000f [unknown] (//anon)\n"
            "\t            1233 [unknown] ([unknown])\n");
  // A return address at a mapping's start: its lookup address is in the
  // mapping before, as perf's is.
  std::vector<Frame> f = {{0x555555555000, 0, Method::kInitial},
                          {0x555555555000, 0, Method::kEhFrame}};
  const PerfScriptMappings table(maps);
  PerfFrameAddress a = table.Address(f, 1);
  EXPECT_EQ(a.address, 0xfffu);
  EXPECT_EQ(a.dso, "/bin/prog");
  EXPECT_EQ(table.Address(f, 0).address, 0x1000u);
}

TEST(PerfScriptHeader, WiderThanItsColumns) {
  // printf's widths are minimums: wider values are printed whole.
  PerfScriptHeader h{"x", 1234567, 1234, 123456789012345678ULL, 12345678901ULL, "e"};
  EXPECT_EQ(FormatPerfScriptHeader(h),
            "x 1234567 [1234] 123456789.012345: 12345678901 e: \n");
}

TEST(PerfScriptFrames, ZeroAndWidest) {
  unwinder::ThreadStack t;
  t.frames = {{0, 0, Method::kInitial}, {0xffffffffffffffffULL, 0, Method::kSignal}};
  EXPECT_EQ(FormatPerfScriptFrames(t, {}),
            "\t               0 [unknown] ([unknown])\n"
            "\tffffffffffffffff [unknown] ([unknown])\n");
}

TEST(PerfScriptFrames, Kernel) {
  EXPECT_EQ(FormatPerfScriptKernelFrames({0xffffffff815a3452ULL}),
            "\tffffffff815a3452 [unknown] ([kernel.kallsyms])\n");
}

}  // namespace
}  // namespace unwindd::cli
