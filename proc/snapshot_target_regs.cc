#include "proc/snapshot_target_regs.h"

#include "absl/strings/str_format.h"

namespace unwindd::proc {
namespace {

constexpr int kNone = -1;

// perf register index -> DWARF number, per arch.
// arch/x86/include/uapi/asm/perf_regs.h: AX BX CX DX SI DI BP SP IP FLAGS CS
// SS DS ES FS GS, then R8-R15 (x86_64 only). x86_64 psABI fig. 3.36: rax 0,
// rdx 1, rcx 2, rbx 3, rsi 4, rdi 5, rbp 6, rsp 7, r8-r15 8-15, rip 16.
constexpr int kX86_64FromPerf[] = {
    0, 3, 2, 1, 4, 5, 6, 7, 16,                    // AX..IP
    kNone, kNone, kNone, kNone, kNone, kNone, kNone,  // FLAGS, CS..GS
    8, 9, 10, 11, 12, 13, 14, 15};                 // R8..R15
// i386 SysV ABI: eax 0, ecx 1, edx 2, ebx 3, esp 4, ebp 5, esi 6, edi 7,
// eip 8.
constexpr int kX86FromPerf[] = {0, 3, 1, 2, 6, 7, 5, 4, 8};
// arch/arm64/include/uapi/asm/perf_regs.h: X0-X28, X29 (fp), LR (x30), SP,
// PC — the same numbers as AADWARF64 (with our PC slot 32).
constexpr int kAArch64FromPerf[] = {0,  1,  2,  3,  4,  5,  6,  7,  8,
                                    9,  10, 11, 12, 13, 14, 15, 16, 17,
                                    18, 19, 20, 21, 22, 23, 24, 25, 26,
                                    27, 28, 29, 30, 31, 32};

absl::Span<const int> PerfTable(arch::Arch arch) {
  switch (arch) {
    case arch::Arch::kX86_64:
      return kX86_64FromPerf;
    case arch::Arch::kX86:
      return kX86FromPerf;
    case arch::Arch::kAArch64:
      return kAArch64FromPerf;
  }
  return {};
}

}  // namespace

absl::StatusOr<arch::RegisterSet> RegistersFromPerf(
    arch::Arch arch, uint64_t mask, absl::Span<const uint64_t> values) {
  arch::RegisterSet regs(arch);
  absl::Span<const int> table = PerfTable(arch);
  size_t next = 0;
  for (int bit = 0; bit < 64; ++bit) {
    if (!((mask >> bit) & 1)) continue;
    if (next >= values.size()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "perf register mask 0x%x has more bits than the %d values", mask,
          values.size()));
    }
    uint64_t v = values[next++];
    if (static_cast<size_t>(bit) < table.size() && table[bit] != kNone) {
      regs.Set(table[bit], v);
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
