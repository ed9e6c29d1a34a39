// Our SFrame reader against binutils' own: for every committed fixture
// (x86_64 and aarch64; SFrame v1, v2, v3), every function and every FRE of
// the dump `readelf --sframe` printed when the fixture was built must come
// out of our decoder — FDE addresses, sizes, PC types, flex/signal
// attributes — and every row must be what our Row says: CFA rule, FP rule,
// RA rule and the mangled-RA bit.
#include <string>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "testdata/sframe/fixtures.h"
#include "unwinder/module.h"
#include "unwinder/sframe/expr_arena.h"
#include "unwinder/sframe/section.h"

namespace unwindd::sframe_fixtures {
namespace {

using unwinder::CfaRule;
using unwinder::RegisterRule;
using unwinder::Row;
namespace sf = unwinder::sframe;

// readelf's register names in FRE dumps: "sp", "fp", else "r<n>".
std::string RegName(int reg, arch::Arch a) {
  const arch::ArchInfo& info = arch::GetArchInfo(a);
  if (reg == info.sp) return "sp";
  if (reg == info.fp) return "fp";
  return absl::StrFormat("r%d", reg);
}

// "reg+off", or "(reg+off)" when dereferenced (the only expressions the
// SFrame reader makes).
std::string Breg(absl::Span<const uint8_t> e, arch::Arch a) {
  std::optional<sf::BregRule> b = sf::ParseBreg(e);
  if (!b.has_value()) return "?expr";
  std::string s =
      absl::StrFormat("%s%+d", RegName(static_cast<int>(b->reg), a), b->offset);
  return b->deref ? "(" + s + ")" : s;
}

std::string Cfa(const Row& r, arch::Arch a) {
  if (r.cfa.kind == CfaRule::Kind::kExpression) return Breg(r.cfa.expr, a);
  return absl::StrFormat("%s%+d", RegName(r.cfa.reg, a), r.cfa.offset);
}

// FP and RA rules as readelf prints them; `fixed_ra` prints the header's
// fixed RA offset as "f" (readelf's "U" for a flex RA padding word is the
// same rule and is compared as "f").
std::string Rule(const RegisterRule& rule, arch::Arch a, bool fixed_ra) {
  switch (rule.kind) {
    case RegisterRule::Kind::kUnspecified:
    case RegisterRule::Kind::kSameValue:
      return "u";
    case RegisterRule::Kind::kOffset:
      return fixed_ra ? "f" : absl::StrFormat("c%+d", rule.value);
    case RegisterRule::Kind::kRegister:
      return RegName(static_cast<int>(rule.value), a) + "+0";
    case RegisterRule::Kind::kExpression:  // the value at reg + off
      return "(" + Breg(rule.expr, a) + ")";
    case RegisterRule::Kind::kValExpression:
      return Breg(rule.expr, a);
    default:
      return "?";
  }
}

class GoldenTest : public ::testing::TestWithParam<SframeFixture> {};

TEST_P(GoldenTest, EveryFunctionAndRowMatchesReadelf) {
  const SframeFixture& fx = GetParam();
  absl::StatusOr<GoldenSframe> golden = ReadGolden(fx.name);
  ASSERT_TRUE(golden.ok()) << golden.status();
  absl::StatusOr<std::shared_ptr<unwinder::Module>> m =
      unwinder::Module::OpenFile(SframeFixturePath(fx.name));
  ASSERT_TRUE(m.ok()) << m.status();
  const sf::SframeSection* s = (*m)->sframe();
  ASSERT_NE(s, nullptr) << (*m)->sframe_status();
  const arch::Arch a = s->arch();
  EXPECT_EQ(a, fx.x86_64 ? arch::Arch::kX86_64 : arch::Arch::kAArch64);
  EXPECT_EQ(s->header().version, golden->version);
  EXPECT_EQ(golden->version, fx.version);
  EXPECT_EQ(s->num_fdes(), golden->num_fdes);
  EXPECT_EQ(s->header().num_fres, golden->num_fres);
  ASSERT_EQ(golden->functions.size(), s->num_fdes());
  const bool fixed_ra = s->header().cfa_fixed_ra_offset != 0;

  int rows = 0;
  for (uint32_t i = 0; i < s->num_fdes(); ++i) {
    const GoldenFunction& gf = golden->functions[i];
    absl::StatusOr<sf::Fde> fde = s->GetFde(i);
    ASSERT_TRUE(fde.ok()) << fde.status();
    SCOPED_TRACE(absl::StrFormat("%s function %u at 0x%x", fx.name, i, gf.pc));
    EXPECT_EQ(fde->func_start, gf.pc);
    EXPECT_EQ(fde->func_size, gf.size);
    EXPECT_EQ(fde->pc_type == sf::kPcTypeMask, gf.pc_mask);
    EXPECT_EQ(fde->pauth_key_b, gf.pauth_key_b);
    EXPECT_EQ(fde->fde_type == sf::kFdeTypeFlex,
              gf.attrs.find('F') != std::string::npos);
    EXPECT_EQ(fde->signal_frame, gf.attrs.find('S') != std::string::npos);
    absl::StatusOr<std::vector<sf::Fre>> fres = s->GetFres(*fde);
    ASSERT_TRUE(fres.ok()) << fres.status();
    ASSERT_EQ(fres->size(), gf.rows.size());
    for (size_t j = 0; j < fres->size(); ++j) {
      const sf::Fre& fre = (*fres)[j];
      const GoldenRow& gr = gf.rows[j];
      const uint64_t lo = fde->func_start + fre.start;
      EXPECT_EQ(gf.pc_mask ? fre.start : lo, gr.pc) << "row " << j;
      absl::StatusOr<Row> row = s->RowFor(sf::FreMatch{*fde, fre, lo, lo + 1});
      ASSERT_TRUE(row.ok()) << row.status();
      const int ra = row->return_address_register;
      const int fp = arch::GetArchInfo(a).fp;
      if (gr.ra_undefined) {
        EXPECT_EQ(row->regs[ra].kind, RegisterRule::Kind::kUndefined);
        continue;
      }
      // Two spellings of the header's fixed RA offset: a flex RA padding
      // word ("U"), and binutils 2.40's dump of v1, which prints "u".
      std::string want_ra = gr.ra;
      if (fixed_ra &&
          (gr.ra == "U" || (golden->version == 1 && gr.ra == "u"))) {
        want_ra = "f";
      }
      std::string got_ra =
          Rule(row->regs[ra], a, fixed_ra) + (row->ra_signed ? "[s]" : "");
      EXPECT_EQ(Cfa(*row, a), gr.cfa) << "row " << j;
      EXPECT_EQ(Rule(row->regs[fp], a, false), gr.fp) << "row " << j;
      EXPECT_EQ(got_ra, want_ra) << "row " << j;
      ++rows;
    }
  }
  std::cout << fx.name << ": " << s->num_fdes() << " functions, " << rows
            << " rows match readelf\n";
}

INSTANTIATE_TEST_SUITE_P(Fixtures, GoldenTest,
                         ::testing::ValuesIn(SframeFixtures()),
                         [](const auto& i) { return i.param.name; });

TEST(GoldenParserTest, ParsesReadelfRows) {
  absl::StatusOr<GoldenSframe> g = ParseGolden(R"(
  Header :

    Version: SFRAME_VERSION_3
    Flags: SFRAME_F_FDE_SORTED,
           SFRAME_F_FDE_FUNC_START_PCREL
    CFA fixed RA offset: -8
    Num FDEs: 2
    Num FREs: 3

  Function Index :

    func idx [0]: pc = 0x401030, size = 192 bytes
    STARTPC[m]      CFA       FP        RA
    0000000000000000  sp+8      u         f
    000000000000000b  sp+16     u         f

    func idx [1]: pc = 0x401470, size = 53 bytes, attr = "F"
    STARTPC         CFA       FP        RA
    0000000000401491  (fp-8)    (fp+0)    U
    0000000000401493  RA undefined
)");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->version, 3);
  ASSERT_EQ(g->functions.size(), 2u);
  EXPECT_TRUE(g->functions[0].pc_mask);
  EXPECT_EQ(g->functions[0].rows[1].pc, 0xbu);
  EXPECT_EQ(g->functions[1].attrs, "F");
  EXPECT_EQ(g->functions[1].rows[0].cfa, "(fp-8)");
  EXPECT_TRUE(g->functions[1].rows[1].ra_undefined);
}

}  // namespace
}  // namespace unwindd::sframe_fixtures
