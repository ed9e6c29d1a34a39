#include "service/cli/profile/folded.h"

#include "gtest/gtest.h"
#include "service/cli/profile/profile.h"

namespace unwindd::profile {
namespace {

class FoldedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    exe_ = *profile_.AddModule({.path = "/work/bin/demo",
                                .start = 0x555555555000,
                                .limit = 0x555555556000,
                                .file_offset = 0x1000,
                                .load_bias = 0x555555554000});
    // No load bias known: frames are written as file offsets, with '@'.
    libc_ = *profile_.AddModule({.path = "/lib/libc.so.6",
                                 .start = 0x7f0000028000,
                                 .limit = 0x7f00001bd000,
                                 .file_offset = 0x28000});
  }

  Profile profile_;
  int exe_ = 0;
  int libc_ = 0;
};

TEST_F(FoldedTest, OutermostFirstWithModuleOffsets) {
  const Frame stack[] = {
      {.address = 0x7f0000029010, .module = libc_},  // leaf: exact PC
      {.address = 0x555555555235, .return_address = true, .module = exe_},
      {.address = 0x555555555101, .return_address = true, .module = exe_},
      {.address = 0x4242, .return_address = true}};  // in no module
  ASSERT_TRUE(profile_
                  .AddSample({.pid = 7, .tid = 8, .comm = "demo"}, stack, {},
                             {.count = 3, .weight = 30})
                  .ok());
  EXPECT_EQ(WriteFolded(profile_),
            "demo;0x4241;demo+0x1100;demo+0x1234;libc.so.6@0x29010 3\n");
  EXPECT_EQ(
      WriteFolded(profile_, {.root = FoldedRoot::kNone, .use_weight = true}),
      "0x4241;demo+0x1100;demo+0x1234;libc.so.6@0x29010 30\n");
}

TEST_F(FoldedTest, KernelFramesAreAboveTheUserLeaf) {
  const Frame user[] = {
      {.address = 0x555555555400, .module = exe_},
      {.address = 0x555555555101, .return_address = true, .module = exe_}};
  const Frame kernel[] = {
      {.address = 0xffffffff81000010},
      {.address = 0xffffffff81000abd, .return_address = true}};
  ASSERT_TRUE(profile_.AddSample({.comm = "demo"}, user, kernel, {}).ok());
  EXPECT_EQ(WriteFolded(profile_),
            "demo;demo+0x1100;demo+0x1400;0xffffffff81000abc_[k];"
            "0xffffffff81000010_[k] 1\n");
}

TEST_F(FoldedTest, RootFramesAndMergedLines) {
  const Frame stack[] = {{.address = 0x555555555400, .module = exe_}};
  ASSERT_TRUE(
      profile_.AddSample({.pid = 7, .tid = 8, .comm = "demo"}, stack, {}, {})
          .ok());
  ASSERT_TRUE(profile_
                  .AddSample({.pid = 7, .tid = 9, .comm = "demo"}, stack, {},
                             {.count = 2})
                  .ok());
  ASSERT_TRUE(
      profile_.AddSample({.pid = 5, .tid = 5, .comm = "a b;c"}, stack, {}, {})
          .ok());
  ASSERT_TRUE(profile_.AddSample({}, stack, {}, {}).ok());
  // Threads of one comm merge when the tid is not written; lines sorted.
  EXPECT_EQ(WriteFolded(profile_),
            "[unknown];demo+0x1400 1\n"
            "a_b_c;demo+0x1400 1\n"
            "demo;demo+0x1400 3\n");
  EXPECT_EQ(WriteFolded(profile_, {.root = FoldedRoot::kCommPid}),
            "[unknown];demo+0x1400 1\n"
            "a_b_c-5;demo+0x1400 1\n"
            "demo-7;demo+0x1400 3\n");
  EXPECT_EQ(WriteFolded(profile_, {.root = FoldedRoot::kCommPidTid}),
            "[unknown];demo+0x1400 1\n"
            "a_b_c-5/5;demo+0x1400 1\n"
            "demo-7/8;demo+0x1400 1\n"
            "demo-7/9;demo+0x1400 2\n");
  EXPECT_EQ(WriteFolded(profile_, {.root = FoldedRoot::kNone}),
            "demo+0x1400 5\n");
}

TEST_F(FoldedTest, EmptyProfileAndEmptyStack) {
  EXPECT_EQ(WriteFolded(profile_), "");
  ASSERT_TRUE(profile_.AddSample({}, {}, {}, {}).ok());
  EXPECT_EQ(WriteFolded(profile_, {.root = FoldedRoot::kNone}), "[empty] 1\n");
}

}  // namespace
}  // namespace unwindd::profile
