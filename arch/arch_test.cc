#include "arch/arch.h"

#include <elf.h>

#include "arch/arch_ops.h"
#include "arch/frame_pointer.h"
#include "arch/register_set.h"
#include "gtest/gtest.h"

namespace unwindd::arch {
namespace {

TEST(ArchFromElfMachineTest, SupportedMachines) {
  EXPECT_EQ(*ArchFromElfMachine(EM_X86_64, ELFCLASS64), Arch::kX86_64);
  EXPECT_EQ(*ArchFromElfMachine(EM_X86_64, ELFCLASS32), Arch::kX86_64);  // x32
  EXPECT_EQ(*ArchFromElfMachine(EM_386, ELFCLASS32), Arch::kX86);
  EXPECT_EQ(*ArchFromElfMachine(EM_AARCH64, ELFCLASS64), Arch::kAArch64);
}

TEST(ArchFromElfMachineTest, OthersAreUnimplemented) {
  EXPECT_TRUE(absl::IsUnimplemented(
      ArchFromElfMachine(EM_ARM, ELFCLASS32).status()));
  EXPECT_TRUE(absl::IsUnimplemented(
      ArchFromElfMachine(EM_386, ELFCLASS64).status()));
  EXPECT_TRUE(absl::IsUnimplemented(
      ArchFromElfMachine(EM_AARCH64, ELFCLASS32).status()));
  EXPECT_TRUE(absl::IsUnimplemented(ArchFromElfMachine(0, 0).status()));
}

TEST(ArchInfoTest, EveryArchIsConsistent) {
  ASSERT_EQ(AllArchOps().size(), static_cast<size_t>(kNumArchs));
  for (const ArchOps* ops : AllArchOps()) {
    const Arch a = ops->info.arch;
    const ArchInfo& info = GetArchInfo(a);
    EXPECT_EQ(info.arch, a);
    EXPECT_LE(info.num_regs, kMaxRegisters);
    EXPECT_LT(info.sp, info.num_regs);
    EXPECT_LT(info.pc, info.num_regs);
    EXPECT_LT(info.ra, info.num_regs);
    EXPECT_FALSE(RegisterName(a, info.sp).empty());
    EXPECT_FALSE(RegisterName(a, info.fp).empty());
    EXPECT_EQ(RegisterName(a, info.num_regs), "");
    EXPECT_EQ(RegisterName(a, -1), "");
  }
  EXPECT_EQ(GetArchInfo(Arch::kX86).elf_machine, EM_386);
  EXPECT_EQ(GetArchInfo(Arch::kAArch64).elf_machine, EM_AARCH64);
}

// What registering an arch (arch/archs.def) promises generic code: its table
// sits at its enum value, and every hook and table is usable.
TEST(ArchOpsTest, EveryRegisteredArchFillsItsTable) {
  for (int i = 0; i < kNumArchs; ++i) {
    const ArchOps& ops = GetArchOps(static_cast<Arch>(i));
    const ArchInfo& info = ops.info;
    SCOPED_TRACE(std::string(info.name));
    EXPECT_EQ(static_cast<int>(info.arch), i);
    EXPECT_EQ(&GetArchInfo(info.arch), &ops.info);
    EXPECT_EQ(ops.register_names.size(), static_cast<size_t>(info.num_regs));
    EXPECT_EQ(*ArchFromName(info.name), info.arch);
    EXPECT_EQ(*ArchFromElfMachine(info.elf_machine, ops.elf_classes[0]), info.arch);
    EXPECT_TRUE(info.address_size == 4 || info.address_size == 8);
    EXPECT_GT(ops.prstatus_regset_size, 0u);
    EXPECT_NE(ops.registers_from_prstatus, nullptr);
    EXPECT_NE(ops.is_sigreturn_trampoline, nullptr);
    EXPECT_NE(ops.restore_from_sigframe, nullptr);
    EXPECT_NE(ops.keeps_frame_pointer, nullptr);
    EXPECT_EQ(ops.frame_pointer.fp, info.fp);
    EXPECT_LT(ops.frame_pointer.leaf_ra_register, info.num_regs);
    // perf's numbering names tracked registers only, the PC and SP among them.
    bool perf_pc = false, perf_sp = false;
    for (int dwarf : ops.perf_regs) {
      EXPECT_LT(dwarf, info.num_regs);
      perf_pc |= dwarf == info.pc;
      perf_sp |= dwarf == info.sp;
    }
    EXPECT_TRUE(perf_pc && perf_sp);
    // An arch that can sign return addresses strips them, and can be told how.
    EXPECT_EQ(ops.code_address_mask != nullptr, ops.signs_return_addresses);
    EXPECT_EQ(ops.strip_code_address != nullptr, ops.signs_return_addresses);
    EXPECT_EQ(ops.pac_mask_from_note != nullptr, ops.pac_mask_note != 0);
    if (ops.compat) {
      EXPECT_NE(*ops.compat, info.arch);
    }
  }
  EXPECT_TRUE(absl::IsNotFound(ArchFromName("sparc").status()));
}

TEST(RegisterSetTest, MaskFollowsAddressSize) {
  RegisterSet x86(Arch::kX86);
  x86.set_pc(0xffffffff12345678);
  EXPECT_EQ(x86.pc(), 0x12345678u);
  RegisterSet a64(Arch::kAArch64);
  a64.set_pc(0xff12345678);
  EXPECT_EQ(a64.pc(), 0xff12345678u);
  EXPECT_EQ(a64.Get(32), 0xff12345678u);  // the PC slot
}

TEST(FramePointerRuleTest, PerArchRecords) {
  const FramePointerRule& x64 = GetFramePointerRule(Arch::kX86_64);
  EXPECT_EQ(x64.fp, GetArchInfo(Arch::kX86_64).fp);
  EXPECT_EQ(x64.ra_offset, 8);
  EXPECT_EQ(x64.caller_sp_offset, 16);
  const FramePointerRule& x86 = GetFramePointerRule(Arch::kX86);
  EXPECT_EQ(x86.fp, 5);  // ebp
  EXPECT_EQ(x86.saved_fp_offset, 0);
  EXPECT_EQ(x86.ra_offset, 4);
  EXPECT_EQ(x86.caller_sp_offset, 8);
  EXPECT_EQ(x86.leaf_ra_register, -1);
  const FramePointerRule& a64 = GetFramePointerRule(Arch::kAArch64);
  EXPECT_EQ(a64.fp, 29);
  EXPECT_EQ(a64.ra_offset, 8);
  EXPECT_EQ(a64.leaf_ra_register, 30);
}

}  // namespace
}  // namespace unwindd::arch
