#include "arch/x86/signal_frame.h"

#include <array>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "arch/le_bytes.h"
#include "arch/x86/regs.h"

namespace unwindd::arch::x86 {
namespace {

constexpr std::array<uint8_t, 8> kSigreturnCode = {0x58, 0xb8, 0x77, 0x00,
                                                   0x00, 0x00, 0xcd, 0x80};
constexpr std::array<uint8_t, 7> kRtSigreturnCode = {0xb8, 0xad, 0x00, 0x00,
                                                     0x00, 0xcd, 0x80};
// Instruction boundaries inside each trampoline.
constexpr int kSigreturnStarts[] = {0, 1, 6};
constexpr int kRtSigreturnStarts[] = {0, 5};

// struct sigcontext_32: the DWARF number of each 4-byte slot from `di` (at
// byte 16) to `ip` (at byte 56); -1 for trapno and err.
constexpr int kSigcontextFirstGpr = 16;
constexpr std::array<int, 11> kSigcontextToDwarf = {
    kEdi, kEsi, kEbp, kEsp, kEbx, kEdx, kEcx, kEax, -1, -1, kEip,
};

template <size_t N>
bool CodeAt(memory::Memory& memory, uint64_t addr,
            const std::array<uint8_t, N>& code) {
  std::array<uint8_t, N> bytes;
  return memory.ReadFully(addr, absl::MakeSpan(bytes)).ok() && bytes == code;
}

absl::StatusOr<RegisterSet> ReadSigcontext(memory::Memory& memory,
                                           uint64_t sc) {
  std::array<uint8_t, kSigcontextToDwarf.size() * 4> raw;
  const uint64_t start = sc + kSigcontextFirstGpr;
  if (start + raw.size() > 0x100000000u) {
    return absl::OutOfRangeError(
        absl::StrFormat("i386 sigcontext at 0x%x is past 4 GiB", sc));
  }
  absl::Status s = memory.ReadFully(start, absl::MakeSpan(raw));
  if (!s.ok()) return s;
  RegisterSet regs(Arch::kX86);
  for (size_t i = 0; i < kSigcontextToDwarf.size(); ++i) {
    if (kSigcontextToDwarf[i] >= 0) {
      regs.Set(kSigcontextToDwarf[i], LoadLe32(raw, i * 4));
    }
  }
  return regs;
}

}  // namespace

Trampoline FindTrampoline(memory::Memory& memory, uint64_t pc) {
  for (int off : kSigreturnStarts) {
    if (pc >= static_cast<uint64_t>(off) &&
        CodeAt(memory, pc - off, kSigreturnCode)) {
      return {TrampolineKind::kSigreturn, off};
    }
  }
  for (int off : kRtSigreturnStarts) {
    if (pc >= static_cast<uint64_t>(off) &&
        CodeAt(memory, pc - off, kRtSigreturnCode)) {
      return {TrampolineKind::kRtSigreturn, off};
    }
  }
  return {};
}

absl::StatusOr<RegisterSet> RestoreFromSigframe(memory::Memory& code,
                                                memory::Memory& memory,
                                                const RegisterSet& regs) {
  const Trampoline t = FindTrampoline(code, regs.pc());
  const uint64_t sp = regs.sp();  // at `sig`; 32 bits wide (RegisterSet mask)
  switch (t.kind) {
    case TrampolineKind::kSigreturn:
      // Before `pop %eax` the sigcontext follows `sig`; after it, sp is
      // already past `sig`.
      return ReadSigcontext(memory, t.offset == 0 ? sp + 4 : sp);
    case TrampolineKind::kRtSigreturn: {
      // Follow `puc` as gdb does rather than assume siginfo's size.
      absl::StatusOr<uint32_t> puc = memory.ReadU32(sp + 8);
      if (!puc.ok()) return puc.status();
      return ReadSigcontext(memory, uint64_t{*puc} + kUcMcontextOffset);
    }
    case TrampolineKind::kNone:
      break;
  }
  return absl::NotFoundError(absl::StrFormat(
      "0x%x is not an i386 sigreturn trampoline", regs.pc()));
}

}  // namespace unwindd::arch::x86
