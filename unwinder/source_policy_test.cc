#include "unwinder/source_policy.h"

#include "gtest/gtest.h"

namespace unwindd::unwinder {
namespace {

TEST(SourcePolicyTest, DefaultOrder) {
  SourcePolicy p;
  EXPECT_EQ(p.ToString(), "eh_frame,debug_frame,sframe,fp");
  EXPECT_TRUE(p.Contains(Source::kFramePointer));
}

TEST(SourcePolicyTest, ParseKeepsTheOrder) {
  absl::StatusOr<SourcePolicy> p = SourcePolicy::Parse("sframe,eh_frame");
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->sources().size(), 2u);
  EXPECT_EQ(p->sources()[0], Source::kSframe);
  EXPECT_EQ(p->sources()[1], Source::kEhFrame);
  EXPECT_FALSE(p->Contains(Source::kFramePointer));
  EXPECT_EQ(p->ToString(), "sframe,eh_frame");
  EXPECT_EQ(SourcePolicy::Parse("fp")->ToString(), "fp");
}

TEST(SourcePolicyTest, ParseErrors) {
  for (const char* bad :
       {"", "eh_frame,", ",fp", "ehframe", "fp,fp", "sframe,eh_frame,sframe",
        "FP", "eh_frame debug_frame"}) {
    absl::StatusOr<SourcePolicy> p = SourcePolicy::Parse(bad);
    EXPECT_TRUE(absl::IsInvalidArgument(p.status())) << bad;
  }
  EXPECT_NE(SourcePolicy::Parse("fp,fp").status().message().find("twice"),
            std::string::npos);
}

TEST(SourcePolicyTest, AfterAndCodes) {
  SourcePolicy p = *SourcePolicy::Parse("fp,eh_frame,sframe");
  EXPECT_EQ(p.After(Source::kFramePointer).ToString(), "eh_frame,sframe");
  EXPECT_EQ(p.After(Source::kSframe).ToString(), "");
  EXPECT_EQ(p.After(Source::kDebugFrame).ToString(), "fp,eh_frame,sframe");
  // Codes tell every ordered list apart (they key the row cache).
  EXPECT_NE(SourcePolicy::Parse("fp,eh_frame")->Code(),
            SourcePolicy::Parse("eh_frame,fp")->Code());
  EXPECT_NE(SourcePolicy::Parse("fp")->Code(),
            SourcePolicy::Parse("eh_frame")->Code());
  EXPECT_EQ(SourcePolicy::Of({Source::kEhFrame, Source::kEhFrame}).ToString(),
            "eh_frame");
}

}  // namespace
}  // namespace unwindd::unwinder
