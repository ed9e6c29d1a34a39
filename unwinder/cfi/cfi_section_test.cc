// Well-formed CIEs and FDEs, byte by byte: every CIE version, every
// augmentation, 64-bit DWARF, and .debug_frame.
#include "unwinder/cfi/cfi_section.h"

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "arch/arch.h"
#include "gtest/gtest.h"
#include "unwinder/cfi/encoding.h"
#include "unwinder/cfi/test_bytes.h"

namespace unwindd::unwinder {
namespace {

using arch::Arch;

std::vector<uint8_t> ToVector(absl::Span<const uint8_t> s) {
  return std::vector<uint8_t>(s.begin(), s.end());
}

// DW_CFA_def_cfa rsp+8; DW_CFA_offset r16 at cfa-8: what gcc puts in every
// x86_64 CIE.
constexpr uint8_t kCieInsns[] = {0x0c, 0x07, 0x08, 0x90, 0x01};

TestBytes GccCieBody() {
  TestBytes b;
  b.U8(1).Str("zR").Uleb(1).Sleb(-8).U8(16).Uleb(1).U8(kPePcrel | kPeSdata4);
  for (uint8_t i : kCieInsns) b.U8(i);
  return b;
}

// Appends a pcrel|sdata4 FDE for [begin, begin + range) with an empty 'z'
// augmentation, to a section whose first byte is at `vaddr`.
size_t AppendGccFde(TestBytes& s, size_t cie, uint64_t vaddr, uint64_t begin,
                    uint32_t range, std::vector<uint8_t> insns = {0x41}) {
  const uint64_t field = vaddr + s.size() + 8;  // after length and CIE ptr
  TestBytes body;
  body.S32(static_cast<int32_t>(begin - field)).U32(range).Uleb(0);
  for (uint8_t i : insns) body.U8(i);
  return AppendEhFde(s, cie, body);
}

TEST(CfiSectionTest, ParsesGccStyleCieAndFde) {
  constexpr uint64_t kVaddr = 0x2000;
  TestBytes s;
  const size_t cie_off = AppendEhCie(s, GccCieBody());
  // pc_begin below the section: the pcrel offset is negative.
  const size_t fde_off =
      AppendGccFde(s, cie_off, kVaddr, 0x1000, 0x40, {0x41, 0x0e, 0x10});
  CfiSection eh(CfiKind::kEhFrame, s.span(), kVaddr, Arch::kX86_64, {});

  absl::StatusOr<Cie> cie = eh.ParseCieAt(cie_off);
  ASSERT_TRUE(cie.ok()) << cie.status();
  EXPECT_EQ(cie->offset, 0u);
  EXPECT_EQ(cie->version, 1);
  EXPECT_EQ(cie->augmentation, "zR");
  EXPECT_EQ(cie->address_size, 8);
  EXPECT_EQ(cie->code_alignment, 1u);
  EXPECT_EQ(cie->data_alignment, -8);
  EXPECT_EQ(cie->return_address_register, 16);
  EXPECT_EQ(cie->fde_encoding, kPePcrel | kPeSdata4);
  EXPECT_EQ(cie->lsda_encoding, kPeOmit);
  EXPECT_TRUE(cie->has_augmentation_data);
  EXPECT_FALSE(cie->signal_frame);
  EXPECT_EQ(ToVector(cie->initial_instructions),
            std::vector<uint8_t>(std::begin(kCieInsns), std::end(kCieInsns)));

  absl::StatusOr<Fde> fde = eh.ParseFdeAt(fde_off);
  ASSERT_TRUE(fde.ok()) << fde.status();
  EXPECT_EQ(fde->offset, fde_off);
  EXPECT_EQ(fde->cie.offset, cie_off);
  EXPECT_EQ(fde->pc_begin, 0x1000u);
  EXPECT_EQ(fde->pc_end, 0x1040u);
  EXPECT_EQ(ToVector(fde->instructions),
            (std::vector<uint8_t>{0x41, 0x0e, 0x10}));
}

TEST(CfiSectionTest, Version1ReturnAddressIsAByte) {
  // 0x90 would be a ULEB continuation byte; in version 1 it is register 144.
  TestBytes s;
  AppendEhCie(s, TestBytes().U8(1).Str("").Uleb(4).Sleb(-4).U8(0x90).U8(0x0c));
  CfiSection eh(CfiKind::kEhFrame, s.span(), 0, Arch::kX86_64, {});
  absl::StatusOr<Cie> cie = eh.ParseCieAt(0);
  ASSERT_TRUE(cie.ok()) << cie.status();
  EXPECT_EQ(cie->return_address_register, 0x90);
  EXPECT_EQ(cie->code_alignment, 4u);
  EXPECT_EQ(ToVector(cie->initial_instructions), std::vector<uint8_t>{0x0c});
}

TEST(CfiSectionTest, Version3ReturnAddressIsUleb) {
  TestBytes s;
  AppendEhCie(s, TestBytes().U8(3).Str("").Uleb(1).Sleb(-8).Uleb(300).U8(0x0c));
  CfiSection eh(CfiKind::kEhFrame, s.span(), 0, Arch::kX86_64, {});
  absl::StatusOr<Cie> cie = eh.ParseCieAt(0);
  ASSERT_TRUE(cie.ok()) << cie.status();
  EXPECT_EQ(cie->version, 3);
  EXPECT_EQ(cie->return_address_register, 300);
  EXPECT_EQ(ToVector(cie->initial_instructions), std::vector<uint8_t>{0x0c});
}

TEST(CfiSectionTest, Version4AddressSizeDrivesDebugFrameAddresses) {
  TestBytes s;
  const size_t cie_off = AppendEntry(
      s, 0xffffffffu,
      TestBytes().U8(4).Str("").U8(4).U8(0).Uleb(1).Sleb(-4).Uleb(8));
  const size_t fde_off =
      AppendEntry(s, cie_off, TestBytes().U32(0x8048000).U32(0x30).U8(0x41));
  CfiSection df(CfiKind::kDebugFrame, s.span(), 0, Arch::kX86_64, {});
  absl::StatusOr<Fde> fde = df.ParseFdeAt(fde_off);
  ASSERT_TRUE(fde.ok()) << fde.status();
  EXPECT_EQ(fde->cie.version, 4);
  EXPECT_EQ(fde->cie.address_size, 4);
  EXPECT_EQ(fde->cie.segment_size, 0);
  EXPECT_EQ(fde->pc_begin, 0x8048000u);
  EXPECT_EQ(fde->pc_end, 0x8048030u);
  EXPECT_EQ(ToVector(fde->instructions), std::vector<uint8_t>{0x41});
}

TEST(CfiSectionTest, PersonalityAndLsda) {
  constexpr uint64_t kVaddr = 0x10000;
  TestBytes s;
  const size_t cie_off =
      AppendEhCie(s, TestBytes()
                         .U8(1)
                         .Str("zPLR")
                         .Uleb(1)
                         .Sleb(-8)
                         .U8(16)
                         .Uleb(7)  // P: enc + 4 bytes; L: enc; R: enc
                         .U8(kPeIndirect | kPePcrel | kPeSdata4)
                         .S32(0x1234)
                         .U8(kPePcrel | kPeSdata4)
                         .U8(kPePcrel | kPeSdata4)
                         .U8(0x0c));
  const uint64_t field = kVaddr + s.size() + 8;
  const size_t fde_off =
      AppendEhFde(s, cie_off,
                  TestBytes()
                      .S32(static_cast<int32_t>(0x500 - field))
                      .U32(0x10)
                      .Uleb(4)
                      .S32(0x777)  // the LSDA pointer
                      .U8(0x42));
  CfiSection eh(CfiKind::kEhFrame, s.span(), kVaddr, Arch::kX86_64, {});
  absl::StatusOr<Fde> fde = eh.ParseFdeAt(fde_off);
  ASSERT_TRUE(fde.ok()) << fde.status();
  EXPECT_EQ(fde->cie.lsda_encoding, kPePcrel | kPeSdata4);
  EXPECT_EQ(fde->cie.fde_encoding, kPePcrel | kPeSdata4);
  EXPECT_EQ(ToVector(fde->cie.initial_instructions),
            std::vector<uint8_t>{0x0c});
  EXPECT_EQ(fde->pc_begin, 0x500u);
  EXPECT_EQ(fde->pc_end, 0x510u);
  EXPECT_EQ(ToVector(fde->instructions), std::vector<uint8_t>{0x42});
}

TEST(CfiSectionTest, AlignedPersonalityAlignsOnTheFileAddress) {
  TestBytes s;
  // length(4) id(4) version(1) "zP\0"(3) code(1) data(1) ra(1) len(1) enc(1)
  // puts the personality cursor at offset 17 = 0x1011: 7 bytes of padding.
  TestBytes body;
  body.U8(1).Str("zP").Uleb(1).Sleb(-8).U8(16).Uleb(1 + 7 + 8).U8(kPeAligned);
  body.Zeros(7).U64(0xfeedface).U8(0x0c);
  AppendEhCie(s, body);
  CfiSection eh(CfiKind::kEhFrame, s.span(), 0x1000, Arch::kX86_64, {});
  absl::StatusOr<Cie> cie = eh.ParseCieAt(0);
  ASSERT_TRUE(cie.ok()) << cie.status();
  EXPECT_EQ(ToVector(cie->initial_instructions), std::vector<uint8_t>{0x0c});
}

TEST(CfiSectionTest, SignalFrameBKeyAndMte) {
  TestBytes s;
  AppendEhCie(s, TestBytes()
                     .U8(1)
                     .Str("zRSBG")
                     .Uleb(4)
                     .Sleb(-8)
                     .U8(30)
                     .Uleb(1)
                     .U8(kPePcrel | kPeSdata4)
                     .U8(0x0c));
  CfiSection eh(CfiKind::kEhFrame, s.span(), 0, Arch::kAArch64, {});
  absl::StatusOr<Cie> cie = eh.ParseCieAt(0);
  ASSERT_TRUE(cie.ok()) << cie.status();
  EXPECT_TRUE(cie->signal_frame);
  EXPECT_TRUE(cie->b_key);
  EXPECT_EQ(cie->return_address_register, 30);
  EXPECT_EQ(ToVector(cie->initial_instructions), std::vector<uint8_t>{0x0c});
}

TEST(CfiSectionTest, Gcc2EhAugmentationSkipsAPointerSizedWord) {
  for (Arch a : {Arch::kX86_64, Arch::kX86}) {
    const int word = arch::GetArchInfo(a).address_size;
    TestBytes s;
    AppendEhCie(
        s, TestBytes().U8(1).Str("eh").Zeros(word).Uleb(1).Sleb(-4).U8(8).U8(
               0x0c));
    CfiSection eh(CfiKind::kEhFrame, s.span(), 0, a, {});
    absl::StatusOr<Cie> cie = eh.ParseCieAt(0);
    ASSERT_TRUE(cie.ok()) << cie.status();
    EXPECT_EQ(cie->augmentation, "eh");
    EXPECT_EQ(cie->data_alignment, -4);
    EXPECT_EQ(cie->return_address_register, 8);
    EXPECT_EQ(ToVector(cie->initial_instructions), std::vector<uint8_t>{0x0c});
  }
}

TEST(CfiSectionTest, UnknownLetterAfterZIsSkippedByLength) {
  constexpr uint64_t kVaddr = 0x3000;
  TestBytes s;
  const size_t cie_off = AppendEhCie(s, TestBytes()
                                            .U8(1)
                                            .Str("zRXS")
                                            .Uleb(1)
                                            .Sleb(-8)
                                            .U8(16)
                                            .Uleb(4)
                                            .U8(kPePcrel | kPeSdata4)
                                            .Raw({0xee, 0xee, 0xee})
                                            .U8(0x0c));
  const size_t fde_off = AppendGccFde(s, cie_off, kVaddr, 0x3100, 8);
  CfiSection eh(CfiKind::kEhFrame, s.span(), kVaddr, Arch::kX86_64, {});
  absl::StatusOr<Fde> fde = eh.ParseFdeAt(fde_off);
  ASSERT_TRUE(fde.ok()) << fde.status();
  EXPECT_EQ(fde->cie.fde_encoding, kPePcrel | kPeSdata4);
  // Interpretation stopped at 'X': the 'S' after it is not trusted.
  EXPECT_FALSE(fde->cie.signal_frame);
  EXPECT_EQ(ToVector(fde->cie.initial_instructions),
            std::vector<uint8_t>{0x0c});
  EXPECT_EQ(fde->pc_begin, 0x3100u);
}

TEST(CfiSectionTest, LsdaWithoutZIsReadInPlace) {
  TestBytes s;
  const size_t cie_off = AppendEhCie(
      s, TestBytes().U8(1).Str("L").Uleb(1).Sleb(-8).U8(16).U8(kPeUdata4));
  const size_t fde_off = AppendEhFde(
      s, cie_off, TestBytes().U64(0x4000).U64(0x10).U32(0x9999).U8(0x43));
  CfiSection eh(CfiKind::kEhFrame, s.span(), 0, Arch::kX86_64, {});
  absl::StatusOr<Fde> fde = eh.ParseFdeAt(fde_off);
  ASSERT_TRUE(fde.ok()) << fde.status();
  EXPECT_EQ(fde->pc_begin, 0x4000u);
  EXPECT_EQ(ToVector(fde->instructions), std::vector<uint8_t>{0x43});
}

TEST(CfiSectionTest, Dwarf64EhFrame) {
  constexpr uint64_t kVaddr = 0x7000;
  TestBytes s;
  const size_t cie_off = AppendEhCie(s, GccCieBody(), /*dwarf64=*/true);
  // length escape(4) + length(8) + CIE pointer(8) precede pc_begin.
  const uint64_t field = kVaddr + s.size() + 20;
  const size_t fde_off = AppendEhFde(
      s, cie_off,
      TestBytes().S32(static_cast<int32_t>(0x6000 - field)).U32(0x80).Uleb(0),
      /*dwarf64=*/true);
  CfiSection eh(CfiKind::kEhFrame, s.span(), kVaddr, Arch::kX86_64, {});
  absl::StatusOr<Fde> fde = eh.ParseFdeAt(fde_off);
  ASSERT_TRUE(fde.ok()) << fde.status();
  EXPECT_EQ(fde->cie.offset, cie_off);
  EXPECT_EQ(fde->pc_begin, 0x6000u);
  EXPECT_EQ(fde->pc_end, 0x6080u);
  EXPECT_TRUE(fde->instructions.empty());
}

TEST(CfiSectionTest, DebugFrameCiePointerIsASectionOffset) {
  TestBytes s;
  // Two CIEs, so a pointer relative to the FDE would pick the wrong one.
  AppendEntry(s, 0xffffffffu,
              TestBytes().U8(1).Str("").Uleb(1).Sleb(-8).U8(16).U8(0x0c));
  const size_t cie2 =
      AppendEntry(s, 0xffffffffu,
                  TestBytes().U8(3).Str("").Uleb(2).Sleb(-4).Uleb(16).U8(0x0d));
  const size_t fde_off =
      AppendEntry(s, cie2, TestBytes().U64(0x401000).U64(0x20).U8(0x41));
  // .debug_frame addresses are absolute: vaddr must not matter.
  CfiSection df(CfiKind::kDebugFrame, s.span(), 0x99999, Arch::kX86_64, {});
  absl::StatusOr<Fde> fde = df.ParseFdeAt(fde_off);
  ASSERT_TRUE(fde.ok()) << fde.status();
  EXPECT_EQ(fde->cie.offset, cie2);
  EXPECT_EQ(fde->cie.code_alignment, 2u);
  EXPECT_EQ(fde->pc_begin, 0x401000u);
  EXPECT_EQ(fde->pc_end, 0x401020u);
  EXPECT_EQ(ToVector(fde->instructions), std::vector<uint8_t>{0x41});

  // In .debug_frame, id 0 is an FDE pointing at offset 0, not a CIE.
  EXPECT_EQ(df.ParseCieAt(0)->code_alignment, 1u);
}

TEST(CfiSectionTest, DebugFrame64) {
  TestBytes s;
  const size_t cie_off = AppendEntry(
      s, ~uint64_t{0},
      TestBytes().U8(4).Str("").U8(8).U8(0).Uleb(1).Sleb(-8).Uleb(16),
      /*dwarf64=*/true);
  const size_t fde_off = AppendEntry(
      s, cie_off, TestBytes().U64(0x10000).U64(0x100), /*dwarf64=*/true);
  CfiSection df(CfiKind::kDebugFrame, s.span(), 0, Arch::kX86_64, {});
  absl::StatusOr<Fde> fde = df.ParseFdeAt(fde_off);
  ASSERT_TRUE(fde.ok()) << fde.status();
  EXPECT_EQ(fde->pc_begin, 0x10000u);
  EXPECT_EQ(fde->pc_end, 0x10100u);
}

TEST(CfiSectionTest, DebugFrameSegmentSelectorIsSkipped) {
  TestBytes s;
  const size_t cie_off = AppendEntry(
      s, 0xffffffffu,
      TestBytes().U8(4).Str("").U8(8).U8(2).Uleb(1).Sleb(-8).Uleb(16));
  const size_t fde_off = AppendEntry(
      s, cie_off, TestBytes().U16(0xabcd).U64(0x2000).U64(0x10).U8(0x41));
  CfiSection df(CfiKind::kDebugFrame, s.span(), 0, Arch::kX86_64, {});
  absl::StatusOr<Fde> fde = df.ParseFdeAt(fde_off);
  ASSERT_TRUE(fde.ok()) << fde.status();
  EXPECT_EQ(fde->pc_begin, 0x2000u);
  EXPECT_EQ(ToVector(fde->instructions), std::vector<uint8_t>{0x41});
}

TEST(CfiSectionTest, DebugFrameWithZHonoursTheFdeEncoding) {
  TestBytes s;
  const size_t cie_off = AppendEntry(
      s, 0xffffffffu,
      TestBytes().U8(1).Str("zR").Uleb(1).Sleb(-8).U8(16).Uleb(1).U8(
          kPeUdata4));
  const size_t fde_off = AppendEntry(
      s, cie_off, TestBytes().U32(0x5000).U32(0x10).Uleb(0).U8(0x41));
  CfiSection df(CfiKind::kDebugFrame, s.span(), 0, Arch::kX86_64, {});
  absl::StatusOr<Fde> fde = df.ParseFdeAt(fde_off);
  ASSERT_TRUE(fde.ok()) << fde.status();
  EXPECT_EQ(fde->pc_begin, 0x5000u);
  EXPECT_EQ(fde->pc_end, 0x5010u);
}

TEST(CfiSectionTest, DatarelFdeUsesTheDataBase) {
  TestBytes s;
  const size_t cie_off = AppendEhCie(
      s, TestBytes().U8(1).Str("zR").Uleb(1).Sleb(-4).U8(8).Uleb(1).U8(
             kPeDatarel | kPeSdata4));
  const size_t fde_off =
      AppendEhFde(s, cie_off, TestBytes().S32(-0x100).U32(0x10).Uleb(0));
  EncodingBases bases{.data = 0x804a000};
  CfiSection eh(CfiKind::kEhFrame, s.span(), 0x8049000, Arch::kX86, bases);
  absl::StatusOr<Fde> fde = eh.ParseFdeAt(fde_off);
  ASSERT_TRUE(fde.ok()) << fde.status();
  EXPECT_EQ(fde->cie.address_size, 4);
  EXPECT_EQ(fde->pc_begin, 0x8049f00u);
  EXPECT_EQ(fde->pc_end, 0x8049f10u);
}

}  // namespace
}  // namespace unwindd::unwinder
