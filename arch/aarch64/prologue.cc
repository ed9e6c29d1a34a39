#include "arch/aarch64/prologue.h"

#include <optional>

namespace unwindd::arch::aarch64 {
namespace {

std::optional<uint32_t> Insn(absl::Span<const uint8_t> code, uint64_t at) {
  if (at > code.size() || code.size() - at < 4) return std::nullopt;
  return uint32_t{code[at]} | uint32_t{code[at + 1]} << 8 |
         uint32_t{code[at + 2]} << 16 | uint32_t{code[at + 3]} << 24;
}

// A64 encodings (Arm ARM C6): stp x29, x30, [sp, #imm]{!} (pre-index or
// signed offset), add x29, sp, #imm (mov x29, sp is #0), ldp x29, x30 and
// ret / autiasp / autibsp.
bool IsStpFrameRecord(uint32_t i) {
  return (i & 0xffc07fff) == 0xa9807bfd || (i & 0xffc07fff) == 0xa9007bfd;
}
bool IsAddX29Sp(uint32_t i) { return (i & 0xff8003ff) == 0x910003fd; }
bool IsLdpFrameRecord(uint32_t i) {
  return (i & 0xffc07fff) == 0xa8c07bfd || (i & 0xffc07fff) == 0xa9407bfd;
}
bool IsReturnOrAuth(uint32_t i) {
  return i == 0xd65f03c0 || i == 0xd50323bf || i == 0xd50323ff;
}

// aarch64: the end of the first "stp x29, x30, [sp...]" followed within two
// instructions by "add x29, sp, #n" that completes at or before `limit`.
std::optional<uint64_t> AArch64PrologueEnd(absl::Span<const uint8_t> code,
                                           uint64_t limit) {
  for (uint64_t at = 0; at + 4 <= limit; at += 4) {
    std::optional<uint32_t> i = Insn(code, at);
    if (!i.has_value()) return std::nullopt;
    if (!IsStpFrameRecord(*i)) continue;
    for (uint64_t next = at + 4; next <= at + 8 && next + 4 <= limit;
         next += 4) {
      std::optional<uint32_t> j = Insn(code, next);
      if (j.has_value() && IsAddX29Sp(*j)) return next + 4;
    }
  }
  return std::nullopt;
}

bool AArch64InEpilogue(absl::Span<const uint8_t> code, uint64_t pc_offset) {
  std::optional<uint32_t> at = Insn(code, pc_offset);
  if (at.has_value() && IsReturnOrAuth(*at)) return true;
  std::optional<uint32_t> before =
      pc_offset >= 4 ? Insn(code, pc_offset - 4) : std::nullopt;
  return before.has_value() && IsLdpFrameRecord(*before);
}

}  // namespace

bool KeepsFramePointer(absl::Span<const uint8_t> code, FrameAddress at) {
  const uint64_t pc_offset = at.LookupAddress();
  std::optional<uint64_t> end = AArch64PrologueEnd(code, pc_offset);
  // Where the thread is, the epilogue may already have restored the
  // caller's frame record; a return address is inside a call, never there.
  if (at.is_instruction_pointer() && end.has_value() &&
      AArch64InEpilogue(code, pc_offset)) {
    return false;
  }
  return end.has_value() && pc_offset >= *end;
}

}  // namespace unwindd::arch::aarch64
