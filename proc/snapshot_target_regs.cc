#include "proc/snapshot_target_regs.h"

#include "absl/strings/str_format.h"

namespace unwindd::proc {

namespace internal {

absl::Status PerfRegisterCountError(uint64_t mask, size_t bits, size_t values) {
  return absl::InvalidArgumentError(absl::StrFormat(
      "perf register mask 0x%x has %d bits but there are %d values", mask, bits, values));
}

}  // namespace internal

absl::StatusOr<arch::RegisterSet> RegistersFromPerf(
    arch::Arch arch, uint64_t mask, absl::Span<const uint64_t> values) {
  arch::RegisterSet regs;
  absl::Status s = RegistersFromPerfInto(arch, mask, values, regs);
  if (!s.ok()) return s;
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
