// x86_64's ArchOps (arch/arch_ops.h).
#include <elf.h>

#include "arch/arch_ops.h"
#include "arch/x86/prologue.h"
#include "arch/x86_64/regs.h"
#include "arch/x86_64/signal_frame.h"

namespace unwindd::arch::x86_64 {
namespace {

// x86_64 psABI §3.6.2 fig. 3.36.
constexpr absl::string_view kNames[] = {
    "rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp", "r8",
    "r9",  "r10", "r11", "r12", "r13", "r14", "r15", "rip"};

// arch/x86/include/uapi/asm/perf_regs.h: AX BX CX DX SI DI BP SP IP FLAGS CS
// SS DS ES FS GS, then R8-R15.
constexpr int kPerfRegs[] = {
    0, 3, 2, 1, 4, 5, 6, 7, 16,   // AX..IP
    -1, -1, -1, -1, -1, -1, -1,   // FLAGS, CS..GS
    8, 9, 10, 11, 12, 13, 14, 15  // R8..R15
};

// SFrame §2.1: SFRAME_ABI_AMD64_ENDIAN_LITTLE.
constexpr uint8_t kSframeAbis[] = {3};

absl::StatusOr<RegisterSet> Restore(memory::Memory& code, memory::Memory& stack,
                                    const RegisterSet& regs) {
  return RestoreFromSigframe(stack, regs.sp());
}

bool IsTrampoline(memory::Memory& code, FrameAddress at) {
  return IsSigreturnTrampoline(code, at);
}

bool KeepsFramePointer(absl::Span<const uint8_t> code, FrameAddress at) {
  return x86::KeepsFramePointer(code, at, /*is64=*/true);
}

}  // namespace

extern const ArchOps kOps = {
    .info = {Arch::kX86_64, "x86_64", /*address_size=*/8, /*num_regs=*/17,
             /*sp=*/7, /*pc=*/16, /*ra=*/16, /*fp=*/6, EM_X86_64},
    .register_names = kNames,
    .elf_classes = {ELFCLASS64, ELFCLASS32},  // x32 runs with this regset
    .sframe_abis = kSframeAbis,
    .prstatus_regset_size = kUserRegsSize,
    .registers_from_prstatus = RegistersFromUserRegs,
    .compat = Arch::kX86,
    .perf_regs = kPerfRegs,
    .is_sigreturn_trampoline = IsTrampoline,
    .restore_from_sigframe = Restore,
    // push %rbp; mov %rsp,%rbp: {saved rbp, return address} at the top.
    .frame_pointer = {/*fp=*/6, /*saved_fp_offset=*/0, /*ra_offset=*/8,
                      /*caller_sp_offset=*/16, /*leaf_ra_register=*/-1,
                      /*caller_sp_exact=*/true},
    .keeps_frame_pointer = KeepsFramePointer,
    .signs_return_addresses = false,
    .pac_mask_note = 0,
    .pac_mask_from_note = nullptr,
    .code_address_mask = nullptr,
    .strip_code_address = nullptr,
};

}  // namespace unwindd::arch::x86_64
