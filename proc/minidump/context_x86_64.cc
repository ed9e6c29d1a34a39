// MDRawContextAMD64 (minidump_cpu_amd64.h; Windows' x64 CONTEXT), 1232
// bytes: six parameter home slots, context_flags at 48, segment selectors
// and eflags, debug registers, then the integer registers rax..r15 from
// offset 120 in CONTEXT's order (rax rcx rdx rbx rsp rbp rsi rdi r8..r15),
// rip at 248, then the FXSAVE area and vector state nothing here reads.
#include "proc/minidump/context.h"

namespace unwindd::proc::minidump {
namespace {

constexpr size_t kSize = 1232;
constexpr size_t kFlags = 48;
constexpr uint32_t kCpu = 0x00100000;      // MD_CONTEXT_AMD64
constexpr uint32_t kControl = kCpu | 0x1;  // rsp, rip (and cs, ss, eflags)
constexpr uint32_t kInteger = kCpu | 0x2;  // the other general registers

// DWARF number (x86_64 psABI fig. 3.36) -> offset in the context.
struct Slot {
  int dwarf;
  size_t offset;
  bool control;
};
constexpr Slot kSlots[] = {
    {0, 120, false},  {2, 128, false},  {1, 136, false},  {3, 144, false},
    {7, 152, true},   {6, 160, false},  {4, 168, false},  {5, 176, false},
    {8, 184, false},  {9, 192, false},  {10, 200, false}, {11, 208, false},
    {12, 216, false}, {13, 224, false}, {14, 232, false}, {15, 240, false},
    {16, 248, true},
};

arch::RegisterSet Parse(absl::Span<const uint8_t> bytes) {
  arch::RegisterSet regs(arch::Arch::kX86_64);
  uint32_t flags = LoadU32(bytes, kFlags);
  // A writer that sets only the CPU bit says nothing about which parts are
  // filled; take them all rather than none.
  if ((flags & 0xff) == 0) flags |= kControl | kInteger;
  for (const Slot& s : kSlots) {
    const uint32_t need = s.control ? kControl : kInteger;
    if ((flags & need) == need) regs.Set(s.dwarf, LoadU64(bytes, s.offset));
  }
  return regs;
}

std::vector<uint8_t> Write(const arch::RegisterSet& regs) {
  std::vector<uint8_t> out(kSize, 0);
  StoreU32(out, kFlags, kControl | kInteger);
  for (const Slot& s : kSlots) StoreU64(out, s.offset, regs.Get(s.dwarf));
  return out;
}

}  // namespace

extern const ContextFormat kContextX86_64 = {
    .arch = arch::Arch::kX86_64,
    .cpu_architectures = {9, 9},  // MD_CPU_ARCHITECTURE_AMD64
    .cpu_flag = kCpu,
    .flags_offset = kFlags,
    .flags_size = 4,
    .size = kSize,
    .parse = Parse,
    .write = Write,
};

}  // namespace unwindd::proc::minidump
