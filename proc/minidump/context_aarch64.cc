// aarch64 contexts (minidump_cpu_arm64.h). MDRawContextARM64 (912 bytes,
// Windows' ARM64_NT_CONTEXT layout): u32 context_flags, u32 cpsr, then
// iregs[33] = x0..x30, sp, pc at 8, then the FP/SIMD registers and debug
// registers. MDRawContextARM64_Old (796 bytes, 4-byte packed, what
// Breakpad wrote before Windows defined ARM64): u64 context_flags, then
// iregs[33] at 8, cpsr, FP state.
#include "proc/minidump/context.h"

namespace unwindd::proc::minidump {
namespace {

constexpr size_t kIregs = 8;
constexpr int kGprCount = 33;  // x0..x30, sp (31), pc (32)
// DWARF: x0..x30 are 0..30, sp 31; the PC slot is 32 (arch/arch.h).

constexpr uint32_t kCpu = 0x00400000;      // MD_CONTEXT_ARM64
constexpr uint32_t kControl = kCpu | 0x1;  // fp, lr, sp, pc, cpsr
constexpr uint32_t kInteger = kCpu | 0x2;  // x0..x28
constexpr uint32_t kCpuOld = 0x80000000;   // MD_CONTEXT_ARM64_OLD

arch::RegisterSet ParseRegs(absl::Span<const uint8_t> bytes, bool control,
                            bool integer) {
  arch::RegisterSet regs(arch::Arch::kAArch64);
  for (int i = 0; i < kGprCount; ++i) {
    // minidump_cpu_arm64.h: the control part is fp (x29), lr (x30), sp, pc.
    const bool is_control = i >= 29;
    if (is_control ? control : integer) {
      regs.Set(i, LoadU64(bytes, kIregs + 8 * static_cast<size_t>(i)));
    }
  }
  return regs;
}

arch::RegisterSet Parse(absl::Span<const uint8_t> bytes) {
  uint32_t flags = LoadU32(bytes, 0);
  if ((flags & 0xff) == 0) flags |= kControl | kInteger;
  return ParseRegs(bytes, (flags & kControl) == kControl,
                   (flags & kInteger) == kInteger);
}

arch::RegisterSet ParseOld(absl::Span<const uint8_t> bytes) {
  // The old layout has no control part: its integer flag covers all 33.
  return ParseRegs(bytes, true, true);
}

std::vector<uint8_t> Write(const arch::RegisterSet& regs) {
  std::vector<uint8_t> out(912, 0);
  StoreU32(out, 0, kControl | kInteger);
  for (int i = 0; i < kGprCount; ++i) {
    StoreU64(out, kIregs + 8 * static_cast<size_t>(i), regs.Get(i));
  }
  return out;
}

}  // namespace

extern const ContextFormat kContextAArch64 = {
    .arch = arch::Arch::kAArch64,
    .cpu_architectures = {12, 0x8003},  // ARM64, Breakpad's ARM64_OLD
    .cpu_flag = kCpu,
    .flags_offset = 0,
    .flags_size = 4,
    .size = 912,
    .parse = Parse,
    .write = Write,
};

extern const ContextFormat kContextAArch64Old = {
    .arch = arch::Arch::kAArch64,
    .cpu_architectures = {0x8003, 12},
    .cpu_flag = kCpuOld,
    .flags_offset = 0,
    .flags_size = 8,
    .size = 796,
    .parse = ParseOld,
    .write = nullptr,
};

}  // namespace unwindd::proc::minidump
