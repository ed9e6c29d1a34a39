#include "testdata/harness/frames.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace unwindd::harness {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Captured from `eu-stack -n 0 -p PID` on signal_handler_O2_nofp_pie
// (shortened).
constexpr char kEuStack[] = R"(PID 5184 - process
TID 5184:
#0  0x00007f559cfb2df2 pause
#1  0x00005637f773e12f main
#2  0x00007f559cf0624a __libc_start_call_main
TID 5187:
#0  0x00007f559cfb2df2 pause
#1  0x00005637f773e2d9 inhandler
#2  0x00007f559cf1b050 __restore_rt
#3  0x00007f559cf69eec __pthread_kill_implementation
#4  0x00007f559cf1afb2 raise
)";

// The same threads with -a: the "- 1" marks, not changed addresses.
constexpr char kEuStackActivation[] = R"(PID 5184 - process
TID 5184:
#0  0x00007f559cfb2df2     pause
#1  0x00005637f773e12f - 1 main
#2  0x00007f559cf0624a - 1 __libc_start_call_main
TID 5187:
#0  0x00007f559cfb2df2     pause
#1  0x00005637f773e2d9 - 1 inhandler
#2  0x00007f559cf1b050     __restore_rt
#3  0x00007f559cf69eec     __pthread_kill_implementation
#4  0x00007f559cf1afb2 - 1 raise
)";

TEST(EuStackParserTest, ParsesThreadsAndNames) {
  SymbolNames names;
  absl::StatusOr<ThreadFrames> frames = ParseEuStackOutput(kEuStack, &names);
  ASSERT_TRUE(frames.ok()) << frames.status();
  ASSERT_EQ(frames->size(), 2u);
  EXPECT_THAT(frames->at(5184),
              ElementsAre(0x7f559cfb2df2, 0x5637f773e12f, 0x7f559cf0624a));
  EXPECT_EQ(frames->at(5187).size(), 5u);
  EXPECT_EQ(frames->at(5187)[3], 0x7f559cf69eecu);
  EXPECT_EQ(names[0x5637f773e2d9], "inhandler");
  EXPECT_EQ(names[0x7f559cf1b050], "__restore_rt");
}

TEST(EuStackParserTest, ActivationMarksDoNotChangePcs) {
  SymbolNames names;
  absl::StatusOr<ThreadFrames> plain = ParseEuStackOutput(kEuStack);
  absl::StatusOr<ThreadFrames> marked =
      ParseEuStackOutput(kEuStackActivation, &names);
  ASSERT_TRUE(plain.ok() && marked.ok());
  EXPECT_EQ(*plain, *marked);
  EXPECT_EQ(names[0x5637f773e12f], "main");
}

TEST(EuStackParserTest, RejectsMalformedOutput) {
  EXPECT_FALSE(ParseEuStackOutput("#0  0x1 orphan\n").ok());
  EXPECT_FALSE(ParseEuStackOutput("TID 1:\n#1  0x1 skipped_zero\n").ok());
  EXPECT_FALSE(ParseEuStackOutput("TID 1:\n#0  12345 no_prefix\n").ok());
  EXPECT_FALSE(ParseEuStackOutput("TID x:\n").ok());
  EXPECT_FALSE(ParseEuStackOutput("TID 1:\nTID 1:\n").ok());
  EXPECT_FALSE(ParseEuStackOutput("TID 1:\nsomething else\n").ok());
}

TEST(GdbParserTest, IgnoresGdbChatter) {
  absl::StatusOr<ThreadFrames> frames = ParseGdbOutput(
      "[New LWP 5214]\n"
      "[Thread debugging using libthread_db enabled]\n"
      "0x00007f49ee6fcdf2 in __libc_pause () at pause.c:29\n"
      "UWD-TID 5212\nUWD-PC 0x7f49ee6fcdf2\nUWD-PC 0x55ab006df12f\n"
      "UWD-TID 5214\nUWD-PC 0x7f49ee7212ec\n"
      "UWD-END\n"
      "[Inferior 1 (process 5212) detached]\n");
  ASSERT_TRUE(frames.ok()) << frames.status();
  EXPECT_THAT(frames->at(5212), ElementsAre(0x7f49ee6fcdf2, 0x55ab006df12f));
  EXPECT_THAT(frames->at(5214), ElementsAre(0x7f49ee7212ec));
}

TEST(GdbParserTest, RequiresTheEndMarker) {
  absl::StatusOr<ThreadFrames> frames =
      ParseGdbOutput("UWD-TID 1\nUWD-PC 0x10\nPython Exception ...\n");
  ASSERT_FALSE(frames.ok());
  EXPECT_THAT(frames.status().message(), HasSubstr("UWD-END"));
  EXPECT_FALSE(ParseGdbOutput("UWD-PC 0x10\nUWD-END\n").ok());
  EXPECT_FALSE(ParseGdbOutput("UWD-TID 1\nUWD-PC 10\nUWD-END\n").ok());
  EXPECT_FALSE(ParseGdbOutput("UWD-END\nUWD-TID 1\n").ok());
}

TEST(UnwindJsonTest, ParsesTheDesignExample) {
  absl::StatusOr<UnwindOutput> out = ParseUnwindJson(R"({"threads": [
    {"tid": 1234, "stop": "end_of_stack",
     "frames": [{"pc": "0x7f1c2a6f16", "sp": "0x7ffd0010", "method": "initial",
                 "module": "/usr/lib/x86_64-linux-gnu/libc.so.6",
                 "build_id": "8a2b", "rel_pc": "0x8ff16"},
                {"pc": "0x55d3c2a01234", "method": "eh_frame"}]},
    {"tid": 1235, "stop": "no_unwind_info", "frames": []}]})");
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->threads.size(), 2u);
  const UnwindThread& t = out->threads.at(1234);
  EXPECT_EQ(t.stop, "end_of_stack");
  ASSERT_EQ(t.frames.size(), 2u);
  EXPECT_EQ(t.frames[0].module, "/usr/lib/x86_64-linux-gnu/libc.so.6");
  EXPECT_EQ(t.frames[0].rel_pc, "0x8ff16");
  EXPECT_EQ(t.frames[0].sp, 0x7ffd0010u);
  EXPECT_EQ(t.frames[1].sp, 0u);  // absent
  EXPECT_EQ(t.frames[1].method, "eh_frame");
  EXPECT_THAT(out->Pcs().at(1234), ElementsAre(0x7f1c2a6f16, 0x55d3c2a01234));
  EXPECT_TRUE(out->Pcs().at(1235).empty());
  EXPECT_THAT(out->Describe(), HasSubstr("tid 1235: stop=no_unwind_info"));
}

TEST(UnwindJsonTest, RejectsWhatTheComparisonCannotUse) {
  EXPECT_FALSE(ParseUnwindJson("{}").ok());
  EXPECT_FALSE(ParseUnwindJson(R"({"threads": {}})").ok());
  EXPECT_FALSE(ParseUnwindJson(
                   R"({"threads": [{"tid": "1", "stop": "x", "frames": []}]})")
                   .ok());
  EXPECT_FALSE(
      ParseUnwindJson(R"({"threads": [{"tid": 1, "frames": []}]})").ok());
  EXPECT_FALSE(
      ParseUnwindJson(
          R"({"threads": [{"tid": 1, "stop": "x", "frames": [{"pc": 16}]}]})")
          .ok());
  EXPECT_FALSE(
      ParseUnwindJson(
          R"({"threads": [{"tid": 1, "stop": "x", "frames": [{"pc": "16"}]}]})")
          .ok());
  EXPECT_FALSE(ParseUnwindJson(
                   R"({"threads": [{"tid": 1, "stop": "x", "frames": []},
                                   {"tid": 1, "stop": "x", "frames": []}]})")
                   .ok());
}

TEST(ParseHexPcTest, RequiresPrefixAndHexDigits) {
  uint64_t pc;
  EXPECT_TRUE(ParseHexPc("0x0", &pc));
  EXPECT_EQ(pc, 0u);
  EXPECT_TRUE(ParseHexPc("0xffffffffffffffff", &pc));
  EXPECT_EQ(pc, ~uint64_t{0});
  EXPECT_FALSE(ParseHexPc("0x1ffffffffffffffff", &pc));
  EXPECT_FALSE(ParseHexPc("ff", &pc));
  EXPECT_FALSE(ParseHexPc("0x", &pc));
  EXPECT_FALSE(ParseHexPc("0x 1", &pc));
  EXPECT_FALSE(ParseHexPc("0x-1", &pc));
}

TEST(CompareTest, EqualFramesHaveNoDiff) {
  ThreadFrames a = {{1, {0x10, 0x20}}, {2, {0x30}}};
  Comparison c = CompareThreadFrames("left", a, "right", a);
  EXPECT_TRUE(c.ok());
  EXPECT_EQ(c.threads, 2);
  EXPECT_EQ(c.matched, 2);
}

TEST(CompareTest, MarksTheFirstDifference) {
  ThreadFrames left = {{7, {0x10, 0x20, 0x30}}, {8, {0x1}}};
  ThreadFrames right = {{7, {0x10, 0x21, 0x30, 0x40}}, {9, {0x2}}};
  SymbolNames names = {{0x20, "Caller"}};
  Comparison c = CompareThreadFrames("eu-stack", left, "gdb", right, &names);
  EXPECT_FALSE(c.ok());
  EXPECT_EQ(c.threads, 3);
  EXPECT_EQ(c.matched, 0);
  EXPECT_EQ(c.diff,
            "thread 7: first difference at frame 1 (eu-stack 3 frames, gdb 4)\n"
            "        #  eu-stack            gdb               \n"
            "      0  0x0000000000000010  0x0000000000000010  \n"
            "  >   1  0x0000000000000020  0x0000000000000021  Caller\n"
            "      2  0x0000000000000030  0x0000000000000030  \n"
            "  !   3  -                   0x0000000000000040  \n"
            "thread 8: only in eu-stack (1 frames)\n"
            "thread 9: only in gdb (1 frames)\n");
}

TEST(CompareTest, LongStacksShowAWindow) {
  std::vector<uint64_t> a(300), b(300);
  for (int i = 0; i < 300; ++i) a[i] = b[i] = 0x1000 + i;
  b[200] = 0;
  Comparison c = CompareThreadFrames("l", {{1, a}}, "r", {{1, b}});
  EXPECT_THAT(c.diff, HasSubstr("... 197 equal frames\n"));
  EXPECT_THAT(c.diff, HasSubstr("> 200"));
  EXPECT_THAT(c.diff, HasSubstr("... 88 more frames\n"));
}

TEST(I386RuleTest, CutsOnlyWhereEuStackStopsAfterMain) {
  const ThreadFrames full = {
      {1, {0x10, 0x20, 0x30, 0x40, 0x50}},  // eu-stack stops after main
      {2, {0x11, 0x21, 0x31}},              // eu-stack has it all
      {3, {0x12, 0x22, 0x32, 0x42}},        // eu-stack stops elsewhere
      {4, {0x13, 0x23, 0x33}},              // eu-stack differs before main
  };
  const ThreadFrames eu = {
      {1, {0x10, 0x20, 0x30}},
      {2, {0x11, 0x21, 0x31}},
      {3, {0x12, 0x22}},
      {4, {0x13, 0x99}},
  };
  const SymbolNames names = {{0x30, "main"}, {0x22, "Reader"}, {0x99, "main"}};
  int cut = -1;
  ThreadFrames adjusted = ApplyI386EuStackRule(full, eu, names, &cut);
  EXPECT_EQ(cut, 1);
  EXPECT_EQ(adjusted.at(1), (std::vector<uint64_t>{0x10, 0x20, 0x30}));
  EXPECT_EQ(adjusted.at(2), full.at(2));
  EXPECT_EQ(adjusted.at(3), full.at(3));  // so the comparison reports it
  EXPECT_EQ(adjusted.at(4), full.at(4));
  EXPECT_TRUE(CompareThreadFrames("eu", eu, "ours", adjusted).diff.find(
                  "thread 1:") == std::string::npos);
}

}  // namespace
}  // namespace unwindd::harness
