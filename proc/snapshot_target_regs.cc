#include "proc/snapshot_target_regs.h"

#include "absl/strings/str_format.h"
#include "arch/arch_ops.h"

namespace unwindd::proc {

absl::StatusOr<arch::RegisterSet> RegistersFromPerf(
    arch::Arch arch, uint64_t mask, absl::Span<const uint64_t> values) {
  arch::RegisterSet regs(arch);
  // perf index -> DWARF number, -1 for registers the unwinder does not track.
  absl::Span<const int> table = arch::GetArchOps(arch).perf_regs;
  // One value per set bit of `mask`, lowest bit first (perf_regs.h).
  const size_t bits = static_cast<size_t>(__builtin_popcountll(mask));
  if (bits > values.size()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "perf register mask 0x%x has more bits than the %d values", mask,
        values.size()));
  }
  size_t next = 0;
  const uint64_t width = regs.mask();  // once, not per register
  for (uint64_t rest = mask; rest != 0; rest &= rest - 1) {
    const int bit = __builtin_ctzll(rest);
    const uint64_t v = values[next++];
    if (static_cast<size_t>(bit) < table.size() && table[bit] >= 0 &&
        table[bit] < arch::kMaxRegisters) {
      regs.SetUnchecked(table[bit], v & width);
    }
  }
  if (next != values.size()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "perf register mask 0x%x has %d bits but there are %d values", mask,
        next, values.size()));
  }
  return regs;
}

absl::StatusOr<arch::RegisterSet> RegistersFromDwarf(
    arch::Arch arch, absl::Span<const std::pair<uint32_t, uint64_t>> values) {
  arch::RegisterSet regs(arch);
  const int num = arch::GetArchInfo(arch).num_regs;
  for (const auto& [reg, value] : values) {
    if (reg >= static_cast<uint32_t>(num)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "DWARF register %d is not one of the %d registers tracked for %s",
          reg, num, arch::GetArchInfo(arch).name));
    }
    regs.Set(static_cast<int>(reg), value);
  }
  return regs;
}

}  // namespace unwindd::proc
