#include "arch/regset.h"

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "arch/arch_ops.h"
#include "arch/le_bytes.h"

namespace unwindd::arch {
namespace {

// struct elf_prstatus_common: pr_info (struct elf_siginfo, 3 ints) at 0,
// short pr_cursig at 12, then pr_sigpend/pr_sighold (unsigned long), pr_pid,
// pr_ppid, pr_pgrp, pr_sid (pid_t), four struct timeval (2 longs each).
constexpr size_t kCursigOffset = 12;
constexpr size_t kPidOffset64 = 32;  // after two 8-byte longs at 16 and 24
constexpr size_t kPidOffset32 = 24;  // after two 4-byte longs at 16 and 20
// pr_fpvalid (int) follows pr_reg.
constexpr size_t kFpvalidSize = 4;

}  // namespace

size_t PrStatusRegsetSize(Arch arch) {
  return GetArchOps(arch).prstatus_regset_size;
}

absl::StatusOr<RegisterSet> RegistersFromPrStatus(
    Arch arch, absl::Span<const uint8_t> bytes) {
  return GetArchOps(arch).registers_from_prstatus(bytes);
}

Arch RegsetArch(Arch exe_arch, size_t size) {
  // The candidates: the executable's arch, its compat arch (x86_64 -> i386),
  // and the arch it is the compat of (i386 -> x86_64).
  const std::optional<Arch> compat = GetArchOps(exe_arch).compat;
  for (const ArchOps* ops : AllArchOps()) {
    const Arch a = ops->info.arch;
    const bool related = a == exe_arch || (compat && a == *compat) ||
                         (ops->compat && *ops->compat == exe_arch);
    if (related && ops->prstatus_regset_size == size) return a;
  }
  return exe_arch;
}

size_t PrStatusRegOffset(Arch arch) {
  // 64-bit: pid_t x4 end at 48, then 4 timevals of 16 bytes. i386: pid_t x4
  // end at 40, then 4 timevals of 8 bytes.
  return GetArchInfo(arch).address_size == 8 ? 48 + 4 * 16 : 40 + 4 * 8;
}

absl::StatusOr<CorePrStatus> ParseCorePrStatus(
    Arch arch, absl::Span<const uint8_t> desc) {
  const size_t reg_offset = PrStatusRegOffset(arch);
  const size_t need = reg_offset + PrStatusRegsetSize(arch) + kFpvalidSize;
  if (desc.size() < need) {
    return absl::DataLossError(absl::StrFormat(
        "%s NT_PRSTATUS note is %d bytes, need %d", GetArchInfo(arch).name,
        desc.size(), need));
  }
  CorePrStatus out;
  out.signal = static_cast<int16_t>(LoadLe(desc, kCursigOffset, 2));
  const size_t pid_offset =
      GetArchInfo(arch).address_size == 8 ? kPidOffset64 : kPidOffset32;
  out.pid = static_cast<pid_t>(LoadLe32(desc, pid_offset));
  absl::StatusOr<RegisterSet> regs =
      RegistersFromPrStatus(arch, desc.subspan(reg_offset));
  if (!regs.ok()) return regs.status();
  out.regs = *regs;
  return out;
}

}  // namespace unwindd::arch
