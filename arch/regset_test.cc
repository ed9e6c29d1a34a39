#include "arch/regset.h"

#include <vector>

#include "gtest/gtest.h"

#if defined(__x86_64__)
#include <sys/procfs.h>

#include <cstddef>
#endif

namespace unwindd::arch {
namespace {

#if defined(__x86_64__)
// The host's own elf_prstatus agrees with the 64-bit layout we spell out.
static_assert(offsetof(elf_prstatus, pr_reg) == 112);
static_assert(offsetof(elf_prstatus, pr_pid) == 32);
static_assert(offsetof(elf_prstatus, pr_cursig) == 12);
static_assert(sizeof(elf_prstatus) == 336);
#endif

void PutLe(std::vector<uint8_t>& b, size_t off, uint64_t v, int size) {
  for (int i = 0; i < size; ++i) b[off + i] = (v >> (8 * i)) & 0xff;
}

TEST(RegsetTest, Sizes) {
  EXPECT_EQ(PrStatusRegsetSize(Arch::kX86_64), 216u);
  EXPECT_EQ(PrStatusRegsetSize(Arch::kX86), 68u);
  EXPECT_EQ(PrStatusRegsetSize(Arch::kAArch64), 272u);
  EXPECT_EQ(PrStatusRegOffset(Arch::kX86_64), 112u);
  EXPECT_EQ(PrStatusRegOffset(Arch::kAArch64), 112u);
  EXPECT_EQ(PrStatusRegOffset(Arch::kX86), 72u);
}

TEST(RegsetTest, DispatchesOnArch) {
  std::vector<uint8_t> x64(216), x86(68), a64(272);
  PutLe(x64, 16 * 8, 0x401000, 8);  // rip
  PutLe(x86, 12 * 4, 0x8049000, 4);  // eip
  PutLe(a64, 32 * 8, 0x5500000abc, 8);  // pc
  EXPECT_EQ(RegistersFromPrStatus(Arch::kX86_64, x64)->pc(), 0x401000u);
  EXPECT_EQ(RegistersFromPrStatus(Arch::kX86, x86)->pc(), 0x8049000u);
  EXPECT_EQ(RegistersFromPrStatus(Arch::kAArch64, a64)->pc(), 0x5500000abcu);
  EXPECT_EQ(RegistersFromPrStatus(Arch::kX86, x86)->arch(), Arch::kX86);
  // The 32-bit regset is too short for the 64-bit layouts.
  EXPECT_TRUE(absl::IsDataLoss(
      RegistersFromPrStatus(Arch::kX86_64, x86).status()));
  EXPECT_TRUE(absl::IsDataLoss(
      RegistersFromPrStatus(Arch::kAArch64, x64).status()));
}

TEST(RegsetTest, RegsetArchFromSize) {
  // A 64-bit tracer gets the tracee's view: 68 bytes for a compat thread.
  EXPECT_EQ(RegsetArch(Arch::kX86_64, 68), Arch::kX86);
  EXPECT_EQ(RegsetArch(Arch::kX86, 216), Arch::kX86_64);
  EXPECT_EQ(RegsetArch(Arch::kX86, 68), Arch::kX86);
  EXPECT_EQ(RegsetArch(Arch::kX86_64, 100), Arch::kX86_64);
  EXPECT_EQ(RegsetArch(Arch::kAArch64, 68), Arch::kAArch64);
}

// elf_prstatus with pr_cursig, pr_pid and the PC filled.
std::vector<uint8_t> PrStatus(Arch a, size_t size, size_t pid_off,
                              size_t pc_off) {
  std::vector<uint8_t> b(size, 0);
  PutLe(b, 12, 11, 2);  // SIGSEGV
  PutLe(b, pid_off, 4242, 4);
  PutLe(b, PrStatusRegOffset(a) + pc_off, 0x1234, GetArchInfo(a).address_size);
  return b;
}

TEST(CorePrStatusTest, EveryArch) {
  struct Case {
    Arch arch;
    size_t size, pid_off, pc_off;
  } cases[] = {
      {Arch::kX86_64, 336, 32, 16 * 8},
      {Arch::kX86, 144, 24, 12 * 4},
      {Arch::kAArch64, 392, 32, 32 * 8},
  };
  for (const Case& c : cases) {
    absl::StatusOr<CorePrStatus> p =
        ParseCorePrStatus(c.arch, PrStatus(c.arch, c.size, c.pid_off, c.pc_off));
    ASSERT_TRUE(p.ok()) << p.status();
    EXPECT_EQ(p->pid, 4242);
    EXPECT_EQ(p->signal, 11);
    EXPECT_EQ(p->regs.arch(), c.arch);
    EXPECT_EQ(p->regs.pc(), 0x1234u);
  }
}

TEST(CorePrStatusTest, ShortNoteIsDataLoss) {
  // pr_reg must be whole and pr_fpvalid present.
  EXPECT_TRUE(absl::IsDataLoss(
      ParseCorePrStatus(Arch::kX86, std::vector<uint8_t>(143)).status()));
  EXPECT_TRUE(absl::IsDataLoss(
      ParseCorePrStatus(Arch::kAArch64, std::vector<uint8_t>(336)).status()));
  EXPECT_TRUE(absl::IsDataLoss(
      ParseCorePrStatus(Arch::kX86_64, std::vector<uint8_t>()).status()));
  EXPECT_TRUE(ParseCorePrStatus(Arch::kX86, std::vector<uint8_t>(144)).ok());
}

}  // namespace
}  // namespace unwindd::arch
