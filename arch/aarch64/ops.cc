// aarch64's ArchOps (arch/arch_ops.h).
#include <elf.h>

#include "arch/aarch64/pac.h"
#include "arch/aarch64/prologue.h"
#include "arch/aarch64/regs.h"
#include "arch/aarch64/signal_frame.h"
#include "arch/arch_ops.h"

namespace unwindd::arch::aarch64 {
namespace {

// AADWARF64 §4.1: x0-x30, sp (31); 32 is our PC slot (the number AADWARF64
// reserves for it), 33 ELR_mode, 34 RA_SIGN_STATE.
constexpr absl::string_view kNames[] = {
    "x0",  "x1",  "x2",  "x3",  "x4",  "x5",  "x6",  "x7",  "x8",
    "x9",  "x10", "x11", "x12", "x13", "x14", "x15", "x16", "x17",
    "x18", "x19", "x20", "x21", "x22", "x23", "x24", "x25", "x26",
    "x27", "x28", "x29", "x30", "sp",  "pc",  "elr_mode",
    "ra_sign_state"};

// arch/arm64/include/uapi/asm/perf_regs.h: X0-X28, X29 (fp), LR (x30), SP,
// PC — the same numbers as AADWARF64 (with our PC slot 32).
constexpr int kPerfRegs[] = {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10,
                             11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21,
                             22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32};

// SFrame §2.1: SFRAME_ABI_AARCH64_ENDIAN_BIG, _LITTLE.
constexpr uint8_t kSframeAbis[] = {1, 2};

absl::StatusOr<RegisterSet> Restore(memory::Memory& code, memory::Memory& stack,
                                    const RegisterSet& regs) {
  return RestoreFromSigframe(stack, regs.sp());
}

bool IsTrampoline(memory::Memory& code, FrameAddress at) {
  return IsSigreturnTrampoline(code, at.address());
}

}  // namespace

extern const ArchOps kOps = {
    .info = {Arch::kAArch64, "aarch64", /*address_size=*/8, /*num_regs=*/35,
             /*sp=*/kSp, /*pc=*/kPc, /*ra=*/kLr, /*fp=*/kFp, EM_AARCH64},
    .register_names = kNames,
    .elf_classes = {ELFCLASS64, 0},
    .sframe_abis = kSframeAbis,
    .prstatus_regset_size = kUserPtRegsSize,
    .registers_from_prstatus = RegistersFromUserPtRegs,
    .compat = std::nullopt,
    .perf_regs = kPerfRegs,
    .is_sigreturn_trampoline = IsTrampoline,
    .restore_from_sigframe = Restore,
    // AAPCS64 §6.2.3 (stp x29, x30, [sp, #-N]!; mov x29, sp): the record
    // {saved x29, saved x30} is at the bottom of the frame, so fp + 16 is
    // only a lower bound of the caller's sp; before the record is pushed the
    // return address is still in x30.
    .frame_pointer = {/*fp=*/kFp, /*saved_fp_offset=*/0, /*ra_offset=*/8,
                      /*caller_sp_offset=*/16, /*leaf_ra_register=*/kLr,
                      /*caller_sp_exact=*/false},
    .keeps_frame_pointer = KeepsFramePointer,
    .signs_return_addresses = true,
    .pac_mask_note = kNtArmPacMask,
    .pac_mask_from_note = PacMaskFromUserPacMask,
    .code_address_mask = CodeAddressMask,
    .strip_code_address = StripCode,
};

}  // namespace unwindd::arch::aarch64
