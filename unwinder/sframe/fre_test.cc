// SFrame §2.4: FRE start offsets of every FRE type (ADDR1/2/4), data words of
// every size (1/2/4 bytes, sign-extended), the info bits, both byte orders,
// and FREs that leave the FRE sub-section.
#include "unwinder/sframe/fre.h"

#include "gtest/gtest.h"
#include "unwinder/sframe/fde.h"
#include "unwinder/sframe/testing/sframe_builder.h"

namespace unwindd::unwinder::sframe {
namespace {

using testing::BuildSframe;
using testing::FdeSpec;
using testing::FreSpec;
using testing::SectionSpec;

struct Built {
  std::vector<uint8_t> bytes;
  Header header;
  Fde fde;
};

Built Build(uint8_t fre_type, std::vector<FreSpec> fres, bool big = false,
            uint8_t version = kVersion2) {
  SectionSpec s;
  s.version = version;
  s.big_endian = big;
  s.fdes.push_back(FdeSpec{.func_start = 0x1000,
                           .size = 0x20000,
                           .fre_type = fre_type,
                           .fres = std::move(fres)});
  Built b;
  b.bytes = BuildSframe(s);
  b.header = *ParseHeader(b.bytes);
  b.fde = *ReadFde(b.bytes, b.header, s.vaddr, 0);
  return b;
}

struct TypeCase {
  uint8_t fre_type;
  uint32_t start;
  int start_size;
};

class FreTypeTest
    : public ::testing::TestWithParam<std::tuple<TypeCase, bool>> {};

TEST_P(FreTypeTest, StartOffsetOfEachSize) {
  const auto [c, big] = GetParam();
  Built b = Build(c.fre_type,
                  {{.start = c.start,
                    .base_sp = false,
                    .words = {-16, 32},
                    .word_size = 2}},
                  big);
  absl::StatusOr<Fre> f =
      ReadFre(b.bytes, b.fde.fres_offset, c.fre_type, b.header);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->start, c.start);
  EXPECT_FALSE(f->cfa_base_sp);
  EXPECT_EQ(f->num_words, 2);
  EXPECT_EQ(f->word_size, 2);
  EXPECT_EQ(f->Signed(0), -16);
  EXPECT_EQ(f->Signed(1), 32);
  EXPECT_EQ(f->encoded_size, static_cast<uint64_t>(c.start_size + 1 + 4));
}

INSTANTIATE_TEST_SUITE_P(
    Types, FreTypeTest,
    ::testing::Combine(::testing::Values(TypeCase{kFreTypeAddr1, 0xfe, 1},
                                         TypeCase{kFreTypeAddr2, 0xfedc, 2},
                                         TypeCase{kFreTypeAddr4, 0x12345678,
                                                  4}),
                       ::testing::Bool()),
    [](const auto& i) {
      return "addr" + std::to_string(std::get<0>(i.param).start_size) +
             (std::get<1>(i.param) ? "_be" : "_le");
    });

TEST(FreTest, WordSizesAndSignExtension) {
  for (bool big : {false, true}) {
    Built b = Build(kFreTypeAddr1,
                    {{.start = 0, .words = {-1, 127, -128}, .word_size = 1},
                     {.start = 1, .words = {-2, 32767, -32768}, .word_size = 2},
                     {.start = 2,
                      .words = {-3, 0x7fffffff, -0x7fffffff - 1},
                      .word_size = 4}},
                    big);
    uint64_t at = b.fde.fres_offset;
    for (int size : {1, 2, 4}) {
      absl::StatusOr<Fre> f = ReadFre(b.bytes, at, kFreTypeAddr1, b.header);
      ASSERT_TRUE(f.ok()) << f.status();
      EXPECT_EQ(f->word_size, size);
      EXPECT_EQ(f->num_words, 3);
      EXPECT_LT(f->Signed(0), 0) << size;
      EXPECT_GT(f->Signed(1), 0) << size;
      EXPECT_EQ(f->Signed(2), -f->Signed(1) - 1) << size;
      EXPECT_EQ(f->Unsigned(0),
                size == 4 ? 0xfffffffdu : (1u << (8 * size)) - 1 - (size - 1));
      EXPECT_EQ(f->Signed(5), 0);  // past num_words
      at += f->encoded_size;
    }
  }
}

TEST(FreTest, InfoBits) {
  Built b = Build(kFreTypeAddr1, {{.start = 4,
                                   .base_sp = true,
                                   .words = {16, -8, -16},
                                   .mangled_ra = true}});
  absl::StatusOr<Fre> f =
      ReadFre(b.bytes, b.fde.fres_offset, kFreTypeAddr1, b.header);
  ASSERT_TRUE(f.ok());
  EXPECT_TRUE(f->cfa_base_sp);
  EXPECT_TRUE(f->mangled_ra);
  EXPECT_EQ(f->num_words, 3);
  EXPECT_FALSE(f->ra_undefined());
  // The raw info byte: base 1 | 3 words << 1 | size 0 << 5 | mangled << 7.
  EXPECT_EQ(b.bytes[b.fde.fres_offset + 1], 0x87);
}

TEST(FreTest, NoWordsMeansRaUndefined) {
  Built b = Build(kFreTypeAddr1, {{.start = 0, .words = {}}});
  absl::StatusOr<Fre> f =
      ReadFre(b.bytes, b.fde.fres_offset, kFreTypeAddr1, b.header);
  ASSERT_TRUE(f.ok());
  EXPECT_TRUE(f->ra_undefined());
  EXPECT_EQ(f->encoded_size, 2u);
}

TEST(FreTest, ReservedWordSizeIsDataLoss) {
  Built b = Build(kFreTypeAddr1, {{.start = 0, .words = {8}, .word_size = 3}});
  absl::StatusOr<Fre> f =
      ReadFre(b.bytes, b.fde.fres_offset, kFreTypeAddr1, b.header);
  EXPECT_TRUE(absl::IsDataLoss(f.status())) << f.status();
}

TEST(FreTest, OffsetsOutsideTheFreSubSectionAreDataLoss) {
  Built b = Build(kFreTypeAddr4, {{.start = 0, .words = {8}}});
  // Before it (in the FDE array), at its end, and far past the section.
  for (uint64_t at : {uint64_t{0}, b.header.fre_start - 1, b.header.fre_end,
                      uint64_t{1} << 40, ~uint64_t{0}}) {
    absl::StatusOr<Fre> f = ReadFre(b.bytes, at, kFreTypeAddr4, b.header);
    EXPECT_TRUE(absl::IsDataLoss(f.status())) << at << ": " << f.status();
  }
}

TEST(FreTest, WordsRunningPastTheSubSectionAreDataLoss) {
  Built b = Build(kFreTypeAddr1,
                  {{.start = 0, .words = {8, 16, 24}, .word_size = 4}});
  Header cut = b.header;
  cut.fre_end -= 2;  // the last word is cut short
  absl::StatusOr<Fre> f =
      ReadFre(b.bytes, b.fde.fres_offset, kFreTypeAddr1, cut);
  EXPECT_TRUE(absl::IsDataLoss(f.status())) << f.status();
  EXPECT_NE(f.status().message().find("data word 2 of 3"), std::string::npos);
}

}  // namespace
}  // namespace unwindd::unwinder::sframe
