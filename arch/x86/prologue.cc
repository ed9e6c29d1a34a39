#include "arch/x86/prologue.h"

#include <initializer_list>
#include <optional>

namespace unwindd::arch::x86 {
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

}  // namespace

bool KeepsFramePointer(absl::Span<const uint8_t> code, FrameAddress at, bool is64) {
  const uint64_t pc_offset = at.LookupAddress();
  std::optional<uint64_t> end = X86PrologueEnd(code, pc_offset, is64);
  // Where the thread is, the epilogue may already have restored the
  // caller's frame pointer; a return address is inside a call, never there.
  if (at.is_instruction_pointer() && end.has_value() &&
      X86InEpilogue(code, pc_offset)) {
    return false;
  }
  return end.has_value() && pc_offset >= *end;
}

}  // namespace unwindd::arch::x86
