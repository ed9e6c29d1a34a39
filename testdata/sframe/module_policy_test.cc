// Module::FindRow with source policies, on a real binary with .eh_frame and
// .sframe: each source answers where it covers, in policy order, and the
// frame pointer stands in where SFRAME_F_FRAME_POINTER says functions keep
// one but .sframe has no FDE (a copy of a fixture with the flag set and one
// FDE emptied).
#include <fstream>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "testdata/sframe/fixtures.h"
#include "unwinder/module.h"

namespace unwindd::sframe_fixtures {
namespace {

// Frames at these PCs are where the thread is (looked up as they are).
constexpr arch::FrameAddress Ip(uint64_t pc) {
  return arch::FrameAddress::InstructionPointer(pc);
}

using unwinder::Method;
using unwinder::Module;
using unwinder::Source;
using unwinder::SourcePolicy;

constexpr char kFixture[] = "threads_c_sframe_v2_nopie";

// A PC inside the fixture's SleeperChain (the function the disagreement
// was planted in), and the FDE index of that function.
struct Target {
  uint64_t pc;
  uint32_t fde;
};

Target SleeperChain() {
  absl::StatusOr<Planted> p = ReadPlanted();
  EXPECT_TRUE(p.ok()) << p.status();
  absl::StatusOr<GoldenSframe> g = ReadGolden(kFixture);
  EXPECT_TRUE(g.ok()) << g.status();
  for (uint32_t i = 0; i < g->functions.size(); ++i) {
    const GoldenFunction& f = g->functions[i];
    if (p->pc_lo >= f.pc && p->pc_lo < f.pc + f.size) return {p->pc_lo + 2, i};
  }
  ADD_FAILURE() << "no function holds the planted range";
  return {0, 0};
}

std::shared_ptr<Module> Open(const std::string& path) {
  absl::StatusOr<std::shared_ptr<Module>> m = Module::OpenFile(path);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? *m : nullptr;
}

TEST(ModulePolicyTest, SourcesAnswerInPolicyOrder) {
  std::shared_ptr<Module> m = Open(SframeFixturePath(kFixture));
  ASSERT_NE(m, nullptr);
  ASSERT_TRUE(m->has_sframe());
  ASSERT_TRUE(m->has_eh_frame());
  const Target t = SleeperChain();
  auto method = [&](std::initializer_list<Source> s) -> absl::StatusOr<Method> {
    absl::StatusOr<unwinder::ModuleRow> r =
        m->FindRow(Ip(t.pc), SourcePolicy::Of(s));
    if (!r.ok()) return r.status();
    return r->method;
  };
  EXPECT_EQ(*method({Source::kEhFrame, Source::kSframe}), Method::kEhFrame);
  EXPECT_EQ(*method({Source::kSframe, Source::kEhFrame}), Method::kSframe);
  EXPECT_EQ(*method({Source::kSframe}), Method::kSframe);
  EXPECT_EQ(m->FindRow(Ip(t.pc))->method, Method::kEhFrame);  // the default
  // No .debug_frame (-g0), and -fomit-frame-pointer code keeps no frame
  // pointer: those sources do not cover the PC.
  EXPECT_TRUE(absl::IsNotFound(method({Source::kDebugFrame}).status()));
  EXPECT_TRUE(absl::IsNotFound(method({Source::kFramePointer}).status()));
  EXPECT_EQ(
      *method({Source::kFramePointer, Source::kDebugFrame, Source::kSframe}),
      Method::kSframe);
  // The same PC through .sframe and .eh_frame: the same CFA rule.
  absl::StatusOr<unwinder::ModuleRow> s =
      m->FindRow(Ip(t.pc), SourcePolicy::Of({Source::kSframe}));
  absl::StatusOr<unwinder::ModuleRow> e =
      m->FindRow(Ip(t.pc), SourcePolicy::Of({Source::kEhFrame}));
  EXPECT_EQ(s->row.cfa, e->row.cfa);
  // Outside every function: nothing covers it.
  EXPECT_TRUE(
      absl::IsNotFound(m->FindRow(Ip(0x10), SourcePolicy()).status()));
}

TEST(ModulePolicyTest, FramePointerFlagCoversWhatSframeLeavesOut) {
  const std::string path = SframeFixturePath(kFixture);
  std::optional<Section> sec = FindSection(path, ".sframe");
  ASSERT_TRUE(sec.has_value());
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                          std::istreambuf_iterator<char>());
  const Target t = SleeperChain();
  // SFrame v2 §2.1.3 flags at +3; FDE i's size at 28 + 20 * i + 4 (no
  // auxiliary header, FDEs first).
  bytes[sec->offset + 3] |= 0x2;
  for (int b = 0; b < 4; ++b) bytes[sec->offset + 28 + 20 * t.fde + 4 + b] = 0;
  const std::string copy = absl::StrCat(getenv("TEST_TMPDIR"), "/fp_flag");
  std::ofstream(copy, std::ios::binary).write(bytes.data(), bytes.size());

  std::shared_ptr<Module> m = Open(copy);
  ASSERT_NE(m, nullptr);
  ASSERT_TRUE(m->sframe()->header().frame_pointer());
  const SourcePolicy sframe_only = SourcePolicy::Of({Source::kSframe});
  absl::StatusOr<unwinder::ModuleRow> r = m->FindRow(Ip(t.pc), sframe_only);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->method, Method::kFramePointer);
  EXPECT_EQ(r->row.cfa.reg, 6);  // CFA = rbp + 16
  EXPECT_EQ(r->row.cfa.offset, 16);
  // Functions it still covers answer from .sframe.
  absl::StatusOr<GoldenSframe> g = ReadGolden(kFixture);
  const uint64_t other = g->functions[t.fde == 5 ? 6 : 5].pc + 1;
  EXPECT_EQ(m->FindRow(Ip(other), sframe_only)->method, Method::kSframe);
  // Without the flag, the emptied FDE covers nothing.
  bytes[sec->offset + 3] &= ~0x2;
  std::ofstream(copy, std::ios::binary | std::ios::trunc)
      .write(bytes.data(), bytes.size());
  std::shared_ptr<Module> plain = Open(copy);
  EXPECT_TRUE(
      absl::IsNotFound(plain->FindRow(Ip(t.pc), sframe_only).status()));
}

TEST(ModulePolicyTest, BrokenSframeLeavesTheOtherSources) {
  const std::string path = SframeFixturePath(kFixture);
  std::optional<Section> sec = FindSection(path, ".sframe");
  ASSERT_TRUE(sec.has_value());
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                          std::istreambuf_iterator<char>());
  bytes[sec->offset] = 0x12;  // bad magic
  const std::string copy = absl::StrCat(getenv("TEST_TMPDIR"), "/bad_magic");
  std::ofstream(copy, std::ios::binary).write(bytes.data(), bytes.size());
  std::shared_ptr<Module> m = Open(copy);
  ASSERT_NE(m, nullptr);
  EXPECT_FALSE(m->has_sframe());
  EXPECT_TRUE(absl::IsDataLoss(m->sframe_status())) << m->sframe_status();
  const Target t = SleeperChain();
  absl::StatusOr<unwinder::ModuleRow> r =
      m->FindRow(Ip(t.pc), SourcePolicy::Of({Source::kSframe}));
  EXPECT_TRUE(absl::IsDataLoss(r.status())) << r.status();
  r = m->FindRow(Ip(t.pc), SourcePolicy::Of({Source::kSframe, Source::kEhFrame}));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->method, Method::kEhFrame);
}

}  // namespace
}  // namespace unwindd::sframe_fixtures
