// `unwind check-sframe` on every committed fixture: no disagreement where
// binutils' .sframe and .eh_frame say the same, the planted disagreement
// found exactly where it was planted, and — found by this check, kept as a
// regression test — the .plt.got entry that ld 2.44 and 2.47 describe with
// the .plt pltN template (CFA = sp+16 at a bare `jmp *GOT`, where .eh_frame
// correctly says sp+8).
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "testdata/harness/subprocess.h"
#include "testdata/harness/tools.h"
#include "testdata/sframe/fixtures.h"
#include "unwinder/module.h"
#include "unwinder/sframe/check.h"

namespace unwindd::sframe_fixtures {
namespace {

namespace sf = unwinder::sframe;

class CheckSframeTest : public ::testing::TestWithParam<SframeFixture> {};

TEST_P(CheckSframeTest, ReportsExactlyTheExpectedDisagreements) {
  const SframeFixture& fx = GetParam();
  const std::string path = SframeFixturePath(fx.name);
  absl::StatusOr<std::shared_ptr<unwinder::Module>> m =
      unwinder::Module::OpenFile(path);
  ASSERT_TRUE(m.ok()) << m.status();
  absl::StatusOr<sf::CheckReport> r = sf::CheckSframe(**m);
  ASSERT_TRUE(r.ok()) << r.status();
  const std::string text = sf::FormatCheckReport(*r);
  EXPECT_TRUE(r->errors.empty()) << text;
  EXPECT_EQ(r->sframe_version, fx.version);
  EXPECT_GT(r->pcs_compared, 500u) << text;  // every function was compared
  EXPECT_EQ(r->pcs_sframe_only, 0u) << text;
  std::cout << text;

  if (fx.disagreement.empty()) {
    EXPECT_TRUE(r->ok()) << text;
  } else if (fx.disagreement == "planted") {
    absl::StatusOr<Planted> p = ReadPlanted();
    ASSERT_TRUE(p.ok()) << p.status();
    ASSERT_EQ(r->disagreements.size(), 1u) << text;
    const sf::Disagreement& d = r->disagreements[0];
    EXPECT_EQ(d.pc_lo, p->pc_lo) << text;
    EXPECT_EQ(d.pc_hi, p->pc_hi) << text;
    EXPECT_NE(d.what.find("CFA"), std::string::npos);
    EXPECT_NE(d.sframe_rule.find(absl::StrFormat("CFA=rsp%+d", p->new_offset)),
              std::string::npos)
        << d.sframe_rule;
    EXPECT_NE(
        d.eh_frame_rule.find(absl::StrFormat("CFA=rsp%+d", p->old_offset)),
        std::string::npos)
        << d.eh_frame_rule;
  } else {
    std::optional<Section> plt_got = FindSection(path, ".plt.got");
    ASSERT_TRUE(plt_got.has_value());
    ASSERT_EQ(r->disagreements.size(), 1u) << text;
    const sf::Disagreement& d = r->disagreements[0];
    EXPECT_EQ(d.pc_lo, plt_got->addr);
    EXPECT_EQ(d.pc_hi, plt_got->addr + plt_got->size);
    EXPECT_EQ(d.sframe_rule, "CFA=rsp+16 RA=[CFA-8] FP=same");
    EXPECT_EQ(d.eh_frame_rule, "CFA=rsp+8 RA=[CFA-8] FP=same");
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CheckSframeTest,
                         ::testing::ValuesIn(SframeFixtures()),
                         [](const auto& i) { return i.param.name; });

std::string UnwindBinary() {
  return absl::StrCat(harness::RunfilesRoot(), "/service/unwind");
}

TEST(CheckSframeCliTest, ExitCodesAndReport) {
  absl::StatusOr<harness::ToolOutput> clean =
      harness::RunTool({UnwindBinary(), "check-sframe",
                        SframeFixturePath("threads_c_sframe_v3_aarch64")},
                       harness::kToolTimeout);
  ASSERT_TRUE(clean.ok()) << clean.status();
  EXPECT_EQ(clean->exit_code, 0) << clean->stdout_text << clean->stderr_text;
  EXPECT_NE(clean->stdout_text.find("0 disagreements, 0 errors"),
            std::string::npos)
      << clean->stdout_text;

  absl::StatusOr<Planted> p = ReadPlanted();
  ASSERT_TRUE(p.ok());
  absl::StatusOr<harness::ToolOutput> bad = harness::RunTool(
      {UnwindBinary(), "check-sframe",
       SframeFixturePath("threads_c_sframe_v2_nopie_disagree")},
      harness::kToolTimeout);
  ASSERT_TRUE(bad.ok()) << bad.status();
  EXPECT_EQ(bad->exit_code, 3) << bad->stdout_text << bad->stderr_text;
  EXPECT_NE(
      bad->stdout_text.find(absl::StrFormat("0x%x-0x%x", p->pc_lo, p->pc_hi)),
      std::string::npos)
      << bad->stdout_text;
  EXPECT_NE(bad->stdout_text.find(".eh_frame CFA=rsp+32"), std::string::npos)
      << bad->stdout_text;

  // A file without .sframe, and no file at all: errors, exit 1.
  for (const std::string& f : {harness::FixturePath("threads_c_O2_nofp_pie"),
                               std::string("/nonexistent/file")}) {
    absl::StatusOr<harness::ToolOutput> none = harness::RunTool(
        {UnwindBinary(), "check-sframe", f}, harness::kToolTimeout);
    ASSERT_TRUE(none.ok());
    EXPECT_EQ(none->exit_code, 1) << f << none->stdout_text;
    EXPECT_FALSE(none->stderr_text.empty());
  }
}

}  // namespace
}  // namespace unwindd::sframe_fixtures
