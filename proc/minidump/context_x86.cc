// MDRawContextX86 (minidump_cpu_x86.h; Windows' i386 CONTEXT), 716 bytes:
// context_flags, six debug registers, the 112-byte FLOATING_SAVE_AREA, the
// segment registers gs fs es ds at 140, the integer registers edi esi ebx
// edx ecx eax at 156, the control registers ebp eip cs eflags esp ss at
// 180, then 512 bytes of FXSAVE state.
#include "proc/minidump/context.h"

namespace unwindd::proc::minidump {
namespace {

constexpr size_t kSize = 716;
constexpr uint32_t kCpu = 0x00010000;      // MD_CONTEXT_X86
constexpr uint32_t kControl = kCpu | 0x1;  // ebp, eip, cs, eflags, esp, ss
constexpr uint32_t kInteger = kCpu | 0x2;  // edi, esi, ebx, edx, ecx, eax

// DWARF (i386 psABI): 0 eax, 1 ecx, 2 edx, 3 ebx, 4 esp, 5 ebp, 6 esi,
// 7 edi, 8 eip.
struct Slot {
  int dwarf;
  size_t offset;
  bool control;
};
constexpr Slot kSlots[] = {
    {7, 156, false}, {6, 160, false}, {3, 164, false}, {2, 168, false},
    {1, 172, false}, {0, 176, false}, {5, 180, true},  {8, 184, true},
    {4, 196, true},
};

arch::RegisterSet Parse(absl::Span<const uint8_t> bytes) {
  arch::RegisterSet regs(arch::Arch::kX86);
  uint32_t flags = LoadU32(bytes, 0);
  if ((flags & 0xff) == 0) flags |= kControl | kInteger;
  for (const Slot& s : kSlots) {
    const uint32_t need = s.control ? kControl : kInteger;
    if ((flags & need) == need) regs.Set(s.dwarf, LoadU32(bytes, s.offset));
  }
  return regs;
}

std::vector<uint8_t> Write(const arch::RegisterSet& regs) {
  std::vector<uint8_t> out(kSize, 0);
  StoreU32(out, 0, kControl | kInteger);
  for (const Slot& s : kSlots) {
    StoreU32(out, s.offset, static_cast<uint32_t>(regs.Get(s.dwarf)));
  }
  return out;
}

}  // namespace

extern const ContextFormat kContextX86 = {
    .arch = arch::Arch::kX86,
    .cpu_architectures = {0, 0},  // MD_CPU_ARCHITECTURE_X86
    .cpu_flag = kCpu,
    .flags_offset = 0,
    .flags_size = 4,
    .size = kSize,
    .parse = Parse,
    .write = Write,
};

}  // namespace unwindd::proc::minidump
