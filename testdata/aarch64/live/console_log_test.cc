#include "testdata/aarch64/live/console_log.h"

#include "absl/strings/str_replace.h"
#include "gtest/gtest.h"

namespace unwindd::testdata::live {
namespace {

// Shaped like a real guest_init.sh run (with the console's "\r\n").
constexpr char kLog[] = R"(Booting Linux
UWD-LIVE begin kernel=6.1.0-56-arm64
UWD-LIVE hwcap paca=1 pacg=1 bti=0
UWD-LIVE fixture sig_O2_nofp_pac pid=857 threads=2 ready=1
UWD-BLOCK unwind sig_O2_nofp_pac
{"threads": []}
UWD-BLOCK-END unwind sig_O2_nofp_pac rc=0
UWD-BLOCK unwind-stderr sig_O2_nofp_pac
UWD-BLOCK-END unwind-stderr sig_O2_nofp_pac rc=0
UWD-LIVE tracer sig_O2_nofp_pac after=unwind tid=857 tracerpid=0
UWD-LIVE tracer sig_O2_nofp_pac after=unwind tid=862 tracerpid=12
UWD-BLOCK gdb sig_O2_nofp_pac
[New LWP 862]
Thread 2 (Thread 0xffff9fc4f1a0 (LWP 862) "sig"):
^done,stack=[frame={level="0",addr="0x0000ffffa0d4dbc8",func="read",from="/lib/libc.so.6",arch="aarch64"},frame={level="1",addr="0x0000ffffa0e687bc",addr_flags="PAC",func="<signal handler called>"},frame={level="2",addr="0x0000aaaad8e010c0",func="Spin",arch="aarch64"}]

Thread 1 (LWP 857):
^done,stack=[frame={level="0",addr="0x0000ffffa0cab6d8",func="sigtimedwait",arch="aarch64"}]
[Inferior 1 (process 857) detached]
UWD-BLOCK-END gdb sig_O2_nofp_pac rc=0
UWD-LIVE capture sig_O2_nofp_pac rc=0
UWD-LIVE done sig_O2_nofp_pac
UWD-LIVE end fixtures=1 uptime=123.45
)";

TEST(ConsoleLogTest, ParsesFixturesBlocksAndTracers) {
  absl::StatusOr<ConsoleLog> log =
      ParseConsoleLog(absl::StrReplaceAll(kLog, {{"\n", "\r\n"}}));
  ASSERT_TRUE(log.ok()) << log.status();
  EXPECT_EQ(log->kernel, "6.1.0-56-arm64");
  EXPECT_TRUE(log->paca);
  EXPECT_FALSE(log->bti);
  EXPECT_TRUE(log->ended);
  EXPECT_EQ(log->end_fixtures, 1);
  EXPECT_DOUBLE_EQ(log->uptime_s, 123.45);
  ASSERT_EQ(log->fixtures.size(), 1u);
  const FixtureRun& f = log->fixtures[0];
  EXPECT_TRUE(f.pac());
  EXPECT_TRUE(f.ready && f.done);
  EXPECT_EQ(f.pid, 857);
  EXPECT_EQ(f.capture_exit_code, 0);
  ASSERT_NE(f.Block("unwind"), nullptr);
  EXPECT_EQ(f.Block("unwind")->text, "{\"threads\": []}\n");
  EXPECT_EQ(f.Block("unwind-stderr")->text, "");
  EXPECT_EQ(f.Block("eu-stack"), nullptr);
  ASSERT_EQ(f.tracers.size(), 2u);
  EXPECT_EQ(f.tracers[1].tid, 862);
  EXPECT_EQ(f.tracers[1].tracer_pid, 12);
  EXPECT_EQ(f.tracers[1].after, "unwind");

  absl::StatusOr<GdbMiFrames> gdb = ParseGdbMiFrames(f.Block("gdb")->text);
  ASSERT_TRUE(gdb.ok()) << gdb.status();
  ASSERT_EQ(gdb->pcs.size(), 2u);
  EXPECT_EQ(gdb->pcs.at(862),
            (std::vector<uint64_t>{0xffffa0d4dbc8, 0xffffa0e687bc, 0xaaaad8e010c0}));
  EXPECT_EQ(gdb->pcs.at(857), (std::vector<uint64_t>{0xffffa0cab6d8}));
  EXPECT_EQ(gdb->signal_frames.at(862), (std::vector<int>{1}));
  EXPECT_EQ(gdb->signal_frames.count(857), 0u);
  EXPECT_EQ(gdb->pac_flagged.at(862), 1);
}

TEST(ConsoleLogTest, RejectsBrokenLogs) {
  const std::string log = kLog;
  // A block that never ends (the guest died half-way).
  EXPECT_FALSE(ParseConsoleLog(log.substr(0, log.find("UWD-BLOCK-END gdb"))).ok());
  // An end marker for another block.
  EXPECT_FALSE(ParseConsoleLog(absl::StrReplaceAll(
                   log, {{"UWD-BLOCK-END unwind sig", "UWD-BLOCK-END gdb sig"}}))
                   .ok());
  // A tracer line for another fixture.
  EXPECT_FALSE(ParseConsoleLog(absl::StrReplaceAll(
                   log, {{"tracer sig_O2_nofp_pac after=unwind tid=857",
                          "tracer other after=unwind tid=857"}}))
                   .ok());
  EXPECT_FALSE(ParseConsoleLog(absl::StrReplaceAll(log, {{"tracerpid=12", "tracerpid=x"}})).ok());
}

TEST(ConsoleLogTest, RejectsBrokenGdbFrames) {
  EXPECT_FALSE(ParseGdbMiFrames("^done,stack=[frame={level=\"0\",addr=\"0x1\"}]\n").ok());
  EXPECT_FALSE(ParseGdbMiFrames("Thread 1 (LWP 5):\n^done,stack=[frame={level=\"1\",addr=\"0x1\"}]\n").ok());
  EXPECT_FALSE(ParseGdbMiFrames("Thread 1 (LWP 5):\n^done,stack=[frame={level=\"0\",addr=\"zz\"}]\n").ok());
  EXPECT_FALSE(ParseGdbMiFrames("Thread 1 (LWP 5):\nThread 2 (LWP 5):\n").ok());
}

}  // namespace
}  // namespace unwindd::testdata::live
