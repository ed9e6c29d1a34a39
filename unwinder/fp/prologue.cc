#include "unwinder/fp/prologue.h"

#include <optional>

namespace unwindd::unwinder::fp {
namespace {

bool StartsWith(absl::Span<const uint8_t> code, size_t at,
                std::initializer_list<uint8_t> bytes) {
  if (at > code.size() || code.size() - at < bytes.size()) return false;
  size_t i = at;
  for (uint8_t b : bytes) {
    if (code[i++] != b) return false;
  }
  return true;
}

// How far before `mov %sp,%bp` the `push %bp` may be: compilers schedule
// other instructions in between (gcc -O2 main: 16 bytes).
constexpr uint64_t kX86PushToMov = 32;

// x86_64 / i386: the end of the first "push %bp ... mov %sp,%bp" that
// completes at or before `limit`, or nullopt. Compilers shrink-wrap (an
// early-exit path before the prologue) and schedule into the prologue, so
// the pair is searched for rather than expected at the entry; the 3- (2-)
// byte mov encodings are what anchors it.
std::optional<uint64_t> X86PrologueEnd(absl::Span<const uint8_t> code,
                                       uint64_t limit, bool is64) {
  const std::initializer_list<uint8_t> movs64[] = {{0x48, 0x89, 0xe5},
                                                   {0x48, 0x8b, 0xec}};
  const std::initializer_list<uint8_t> movs32[] = {{0x89, 0xe5}, {0x8b, 0xec}};
  const uint64_t mov_size = is64 ? 3 : 2;
  for (uint64_t i = 1; i + mov_size <= limit && i + mov_size <= code.size();
       ++i) {
    bool mov = false;
    for (const auto& m : is64 ? movs64 : movs32) mov |= StartsWith(code, i, m);
    if (!mov) continue;
    for (uint64_t p = i > kX86PushToMov ? i - kX86PushToMov : 0; p < i; ++p) {
      if (code[p] == 0x55) return i + mov_size;  // push %rbp / %ebp
    }
  }
  return std::nullopt;
}

bool X86InEpilogue(absl::Span<const uint8_t> code, uint64_t pc_offset) {
  if (pc_offset < code.size() &&
      (code[pc_offset] == 0xc3 || code[pc_offset] == 0xc2)) {
    return true;  // ret: the frame pointer was restored before it
  }
  // Just after pop %rbp or leave (e.g. before a tail-call jmp).
  return pc_offset > 0 && pc_offset - 1 < code.size() &&
         (code[pc_offset - 1] == 0x5d || code[pc_offset - 1] == 0xc9);
}

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

bool KeepsFramePointer(arch::Arch arch, absl::Span<const uint8_t> code,
                       uint64_t pc_offset, bool exact_pc) {
  std::optional<uint64_t> end;
  switch (arch) {
    case arch::Arch::kX86_64:
    case arch::Arch::kX86:
      end = X86PrologueEnd(code, pc_offset, arch == arch::Arch::kX86_64);
      if (exact_pc && end.has_value() && X86InEpilogue(code, pc_offset)) {
        return false;
      }
      break;
    case arch::Arch::kAArch64:
      end = AArch64PrologueEnd(code, pc_offset);
      if (exact_pc && end.has_value() && AArch64InEpilogue(code, pc_offset)) {
        return false;
      }
      break;
  }
  return end.has_value() && pc_offset >= *end;
}

}  // namespace unwindd::unwinder::fp
