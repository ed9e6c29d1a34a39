// One architecture's facts and hooks in one table, in the way of elfutils'
// backends (backends/x86_64_init.c fills one hook table per arch): generic
// code asks the table of the target's arch and never switches on the arch.
// Each arch defines its table in arch/<arch>/ops.cc and lists itself in
// arch/archs.def; adding an architecture is a new directory and that line.
//
//   const ArchOps& ops = GetArchOps(regs.arch());
//   if (ops.is_sigreturn_trampoline(code, regs.pc())) ...
//
// Register numbers are DWARF numbers (arch.h); addresses are in the
// target's address space.
#ifndef UNWINDD_ARCH_ARCH_OPS_H_
#define UNWINDD_ARCH_ARCH_OPS_H_

#include <cstddef>
#include <cstdint>
#include <optional>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "arch/arch.h"
#include "arch/frame_address.h"
#include "arch/frame_pointer.h"
#include "arch/pac_mask.h"
#include "arch/register_set.h"
#include "memory/memory.h"

namespace unwindd::arch {

struct ArchOps {
  // Name, pointer size, register roles, ELF machine.
  ArchInfo info;
  // DWARF register names by number, [0, info.num_regs).
  absl::Span<const absl::string_view> register_names;

  // ---- Files ----
  // The ELF classes (EI_CLASS) of this arch's files; 0 fills unused slots.
  // x86_64 lists ELFCLASS32 too: x32 processes run with its regset.
  uint8_t elf_classes[2];
  // SFrame §2.1 sfh_abi_arch values that describe this arch.
  absl::Span<const uint8_t> sframe_abis;

  // ---- Kernel register layouts ----
  // sizeof the NT_PRSTATUS regset (elf_gregset_t).
  size_t prstatus_regset_size;
  // NT_PRSTATUS regset bytes (PTRACE_GETREGSET, a core's pr_reg) ->
  // registers; extra trailing bytes are ignored, too few is DataLoss.
  absl::StatusOr<RegisterSet> (*registers_from_prstatus)(
      absl::Span<const uint8_t> bytes);
  // The arch of this one's 32-bit compat threads (x86_64: i386), whose
  // regset a 64-bit kernel hands out for them whoever asks.
  std::optional<Arch> compat;
  // PERF_SAMPLE_REGS_USER numbering (perf_event_<arch>_regs in the kernel's
  // uapi perf_regs.h): perf index -> DWARF number, -1 where untracked.
  absl::Span<const int> perf_regs;

  // ---- Signal frames ----
  // Whether the frame at `at` is in the kernel's sigreturn trampoline (vDSO
  // or libc), recognised by its code bytes read from `code`.
  bool (*is_sigreturn_trampoline)(memory::Memory& code, FrameAddress at);
  // The interrupted registers from the signal frame the kernel pushed on
  // `stack`, for `regs` at the trampoline whose code `code` holds;
  // OutOfRange if the frame is unreadable.
  absl::StatusOr<RegisterSet> (*restore_from_sigframe)(memory::Memory& code,
                                                       memory::Memory& stack,
                                                       const RegisterSet& regs);

  // ---- Frame pointers ----
  FramePointerRule frame_pointer;
  // Whether the function whose code starts at code[0] keeps a frame record
  // at `at`, relative to that start (see arch/prologue.h).
  bool (*keeps_frame_pointer)(absl::Span<const uint8_t> code, FrameAddress at);

  // ---- Pointer authentication ----
  // Return addresses may carry a PAC: CFA opcode 0x2d is
  // DW_CFA_AARCH64_negate_ra_state and SFrame's mangled-RA bit counts.
  bool signs_return_addresses;
  // The ptrace regset and core note type of the PAC masks (NT_ARM_PAC_MASK),
  // 0 if none, and its decoder.
  uint32_t pac_mask_note;
  absl::StatusOr<PacMask> (*pac_mask_from_note)(absl::Span<const uint8_t> bytes);
  // The non-address bits of a code address, given what the target reported
  // (null: none, as on x86).
  uint64_t (*code_address_mask)(const std::optional<PacMask>& pac);
  // `addr` without the bits of a non-zero `mask`.
  uint64_t (*strip_code_address)(uint64_t addr, uint64_t mask);
};

// Defined in registry.cc, indexed by Arch.
extern const ArchOps* const kArchOps[kNumArchs];

inline const ArchOps& GetArchOps(Arch arch) {
  return *kArchOps[static_cast<int>(arch)];
}

// Every registered arch, in Arch order.
absl::Span<const ArchOps* const> AllArchOps();

}  // namespace unwindd::arch

#endif  // UNWINDD_ARCH_ARCH_OPS_H_
