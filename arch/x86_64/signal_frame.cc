#include "arch/x86_64/signal_frame.h"

#include <array>
#include <cstring>

namespace unwindd::arch::x86_64 {
namespace {

constexpr std::array<uint8_t, 9> kRtSigreturn = {0x48, 0xc7, 0xc0, 0x0f, 0x00,
                                                 0x00, 0x00, 0x0f, 0x05};
constexpr uint64_t kSyscallOffset = 7;  // `syscall` follows the 7-byte mov

// struct ucontext { u64 uc_flags; ucontext* uc_link; stack_t uc_stack (24);
// struct sigcontext uc_mcontext; ... }: the sigcontext starts at 40.
constexpr uint64_t kMcontextOffset = 40;

// struct sigcontext (64-bit): r8..r15, rdi, rsi, rbp, rbx, rdx, rax, rcx,
// rsp, rip, eflags, ... — the DWARF number of each slot, in order.
constexpr std::array<int, 17> kSigcontextToDwarf = {
    8, 9, 10, 11, 12, 13, 14, 15,  // r8-r15
    5,                             // rdi
    4,                             // rsi
    6,                             // rbp
    3,                             // rbx
    1,                             // rdx
    0,                             // rax
    2,                             // rcx
    7,                             // rsp
    16,                            // rip
};

}  // namespace

bool IsSigreturnTrampoline(memory::Memory& memory, FrameAddress frame) {
  // pc at `mov $15,%rax` (the handler has just returned into the
  // trampoline) or at `syscall` (stopped between the two; sp is the same);
  // where the thread is, also just past `syscall`: in the kernel's
  // rt_sigreturn, before it has restored anything. (A return address there
  // would be garbage: nothing calls the trampoline.)
  auto at = [&memory](uint64_t start) {
    std::array<uint8_t, kRtSigreturn.size()> code;
    return memory.ReadFully(start, absl::MakeSpan(code)).ok() && code == kRtSigreturn;
  };
  const uint64_t pc = frame.address();
  return at(pc) || (pc >= kSyscallOffset && at(pc - kSyscallOffset)) ||
         (frame.is_instruction_pointer() && pc >= kRtSigreturn.size() &&
          at(pc - kRtSigreturn.size()));
}

absl::StatusOr<RegisterSet> RestoreFromSigframe(memory::Memory& memory,
                                                uint64_t sp) {
  std::array<uint8_t, kSigcontextToDwarf.size() * 8> raw;
  if (sp > UINT64_MAX - kMcontextOffset) {
    return absl::OutOfRangeError("signal frame address wraps");
  }
  absl::Status s = memory.ReadFully(sp + kMcontextOffset, absl::MakeSpan(raw));
  if (!s.ok()) return s;
  RegisterSet regs(Arch::kX86_64);
  for (size_t i = 0; i < kSigcontextToDwarf.size(); ++i) {
    uint64_t v;
    std::memcpy(&v, raw.data() + i * 8, 8);
    regs.Set(kSigcontextToDwarf[i], v);
  }
  return regs;
}

}  // namespace unwindd::arch::x86_64
