// i386's ArchOps (arch/arch_ops.h).
#include <elf.h>

#include "arch/arch_ops.h"
#include "arch/x86/prologue.h"
#include "arch/x86/regs.h"
#include "arch/x86/signal_frame.h"

namespace unwindd::arch::x86 {
namespace {

// i386 SysV ABI DWARF numbers; 8 is the return-address column, which the
// RegisterSet uses as the PC slot.
constexpr absl::string_view kNames[] = {"eax", "ecx", "edx", "ebx", "esp",
                                        "ebp", "esi", "edi", "eip"};

// arch/x86/include/uapi/asm/perf_regs.h: AX BX CX DX SI DI BP SP IP (the
// rest untracked).
constexpr int kPerfRegs[] = {0, 3, 1, 2, 6, 7, 5, 4, 8};

bool KeepsFramePointer32(absl::Span<const uint8_t> code, FrameAddress at) {
  return KeepsFramePointer(code, at, /*is64=*/false);
}

bool IsTrampoline(memory::Memory& code, FrameAddress at) {
  return IsSigreturnTrampoline(code, at.address());
}

}  // namespace

extern const ArchOps kOps = {
    .info = {Arch::kX86, "x86", /*address_size=*/4, /*num_regs=*/9, /*sp=*/4,
             /*pc=*/8, /*ra=*/8, /*fp=*/5, EM_386},
    .register_names = kNames,
    .elf_classes = {ELFCLASS32, 0},
    .sframe_abis = {},  // SFrame has no i386 ABI
    .prstatus_regset_size = kUserRegsSize,
    .registers_from_prstatus = RegistersFromUserRegs,
    .compat = std::nullopt,
    .perf_regs = kPerfRegs,
    .is_sigreturn_trampoline = IsTrampoline,
    .restore_from_sigframe = RestoreFromSigframe,
    // push %ebp; mov %esp,%ebp: {saved ebp, return address} at the top.
    .frame_pointer = {/*fp=*/5, /*saved_fp_offset=*/0, /*ra_offset=*/4,
                      /*caller_sp_offset=*/8, /*leaf_ra_register=*/-1,
                      /*caller_sp_exact=*/true},
    .keeps_frame_pointer = KeepsFramePointer32,
    .signs_return_addresses = false,
    .pac_mask_note = 0,
    .pac_mask_from_note = nullptr,
    .code_address_mask = nullptr,
    .strip_code_address = nullptr,
};

}  // namespace unwindd::arch::x86
