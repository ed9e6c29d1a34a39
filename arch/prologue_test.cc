// Which PCs of a function keep a frame pointer, from its code bytes: entry
// prologues, the shrink-wrapped and scheduled prologues gcc -O2 emits with
// -fno-omit-frame-pointer, leaf functions without one, and epilogues.
#include "arch/prologue.h"

#include <vector>

#include "gtest/gtest.h"

namespace unwindd::arch {
namespace {

// `pc`: the offset looked up; `exact`: an instruction pointer there, else a
// return address just past it.
bool Keeps(Arch a, const std::vector<uint8_t>& code, uint64_t pc, bool exact) {
  return KeepsFramePointer(a, code,
                           exact ? FrameAddress::InstructionPointer(pc)
                                 : FrameAddress::ReturnAddress(pc + 1));
}

TEST(PrologueTest, X86_64EntryPrologue) {
  // push %rbp; mov %rsp,%rbp; sub $0x10,%rsp; call ...; leave; ret
  const std::vector<uint8_t> f = {0x55, 0x48, 0x89, 0xe5, 0x48,
                                  0x83, 0xec, 0x10, 0xe8, 0,
                                  0,    0,    0,    0xc9, 0xc3};
  EXPECT_FALSE(Keeps(Arch::kX86_64, f, 0, true));   // before push
  EXPECT_FALSE(Keeps(Arch::kX86_64, f, 1, true));   // before mov
  EXPECT_TRUE(Keeps(Arch::kX86_64, f, 4, true));    // right after mov
  EXPECT_TRUE(Keeps(Arch::kX86_64, f, 12, false));  // inside the call (ra - 1)
  EXPECT_TRUE(Keeps(Arch::kX86_64, f, 13, true));   // at leave: still set
  EXPECT_FALSE(Keeps(Arch::kX86_64, f, 14, true));  // at ret: restored
}

TEST(PrologueTest, X86_64Endbr64AndTheOtherMovEncoding) {
  const std::vector<uint8_t> f = {0xf3, 0x0f, 0x1e, 0xfa, 0x55,
                                  0x48, 0x8b, 0xec, 0x90};
  EXPECT_FALSE(Keeps(Arch::kX86_64, f, 7, true));
  EXPECT_TRUE(Keeps(Arch::kX86_64, f, 8, true));
}

TEST(PrologueTest, X86_64ShrinkWrapped) {
  // gcc -O2: lock addl; mov; test; je .Lret; push %rbp; mov %rsp,%rbp; ...
  // call; ...; leave; ret; .Lret: ret
  std::vector<uint8_t> f = {0xf0, 0x83, 0x05, 0x50, 0x22, 0,
                            0,    0x01,                       // lock addl
                            0x8b, 0x05, 0x32, 0x22, 0,    0,  // mov
                            0x85, 0xc0, 0x74, 0x30,           // test; je
                            0x55, 0x48, 0x89, 0xe5};          // +18: push; mov
  const uint64_t body = f.size();
  f.insert(f.end(),
           {0xe8, 0, 0, 0, 0, 0x5d, 0xe9, 0, 0, 0, 0});   // call; pop; jmp
  EXPECT_FALSE(Keeps(Arch::kX86_64, f, 4, true));         // the early path
  EXPECT_TRUE(Keeps(Arch::kX86_64, f, body + 4, false));  // the call's ra - 1
  EXPECT_FALSE(Keeps(Arch::kX86_64, f, body + 6, true));  // after pop %rbp
}

TEST(PrologueTest, X86_64ScheduledPrologue) {
  // gcc -O2 main: push %rbp; mov $imm,%eax; movq %rax,%xmm0; mov %rsp,%rbp
  const std::vector<uint8_t> f = {0x55, 0xb8, 0x30, 0x0e, 0x40, 0x00,
                                  0x66, 0x48, 0x0f, 0x6e, 0xc0, 0x48,
                                  0x89, 0xe5, 0x41, 0x56};
  EXPECT_FALSE(Keeps(Arch::kX86_64, f, 11, true));
  EXPECT_TRUE(Keeps(Arch::kX86_64, f, 14, true));
}

TEST(PrologueTest, X86_64LeafWithoutFramePointer) {
  // Spin: mov; add; mov; test; jne; ret — no push %rbp anywhere.
  const std::vector<uint8_t> f = {0x48, 0x8b, 0x05, 0xb9, 0x21, 0,
                                  0,    0x48, 0x83, 0xc0, 0x01, 0x85,
                                  0xc0, 0x75, 0xf0, 0xc3};
  for (uint64_t pc = 0; pc < f.size(); ++pc) {
    EXPECT_FALSE(Keeps(Arch::kX86_64, f, pc, true)) << pc;
  }
  // A mov %rsp,%rbp without a push before it is not a frame either.
  EXPECT_FALSE(Keeps(Arch::kX86_64, {0x90, 0x48, 0x89, 0xe5, 0x90}, 4, true));
}

TEST(PrologueTest, I386) {
  const std::vector<uint8_t> f = {0xf3, 0x0f, 0x1e, 0xfb, 0x55,
                                  0x89, 0xe5, 0x90, 0xc3};
  EXPECT_FALSE(Keeps(Arch::kX86, f, 6, true));
  EXPECT_TRUE(Keeps(Arch::kX86, f, 7, true));
  EXPECT_FALSE(Keeps(Arch::kX86, f, 8, true));
  EXPECT_TRUE(Keeps(Arch::kX86, {0x55, 0x8b, 0xec, 0x90}, 3, true));
  EXPECT_FALSE(Keeps(Arch::kX86, {0x55, 0x8b, 0xec, 0x90}, 2, true));
}

std::vector<uint8_t> A64(std::initializer_list<uint32_t> insns) {
  std::vector<uint8_t> out;
  for (uint32_t i : insns) {
    for (int b = 0; b < 4; ++b)
      out.push_back(static_cast<uint8_t>(i >> (8 * b)));
  }
  return out;
}

TEST(PrologueTest, AArch64PacRetPrologue) {
  // paciasp; stp x29, x30, [sp, #-32]!; mov x29, sp; bl; ldp x29, x30,
  // [sp], #32; autiasp; ret
  const std::vector<uint8_t> f =
      A64({0xd503233f, 0xa9be7bfd, 0x910003fd, 0x94000000, 0xa8c27bfd,
           0xd50323bf, 0xd65f03c0});
  EXPECT_FALSE(Keeps(Arch::kAArch64, f, 4, true));   // at stp
  EXPECT_FALSE(Keeps(Arch::kAArch64, f, 8, true));   // at mov
  EXPECT_TRUE(Keeps(Arch::kAArch64, f, 12, true));   // at bl
  EXPECT_TRUE(Keeps(Arch::kAArch64, f, 15, false));  // the bl's ra - 1
  EXPECT_TRUE(Keeps(Arch::kAArch64, f, 16, true));   // at ldp: not yet
  EXPECT_FALSE(Keeps(Arch::kAArch64, f, 20, true));  // after ldp
  EXPECT_FALSE(Keeps(Arch::kAArch64, f, 24, true));  // at ret
}

TEST(PrologueTest, AArch64RecordAboveLocals) {
  // sub sp, sp, #64; stp x29, x30, [sp, #48]; add x29, sp, #48; bl
  const std::vector<uint8_t> f =
      A64({0xd10103ff, 0xa9037bfd, 0x9100c3fd, 0x94000000});
  EXPECT_FALSE(Keeps(Arch::kAArch64, f, 8, true));
  EXPECT_TRUE(Keeps(Arch::kAArch64, f, 12, true));
}

TEST(PrologueTest, AArch64LeafAndTruncatedCode) {
  EXPECT_FALSE(Keeps(Arch::kAArch64, A64({0x91000400, 0xd65f03c0}), 4, true));
  EXPECT_FALSE(Keeps(Arch::kAArch64, {}, 0, true));
  EXPECT_FALSE(Keeps(Arch::kX86_64, {}, 0, true));
  EXPECT_FALSE(Keeps(Arch::kX86_64, {0x55}, 100, false));
  // pc past the bytes we have: the prologue is still seen.
  EXPECT_TRUE(Keeps(Arch::kX86_64, {0x55, 0x48, 0x89, 0xe5}, 100, false));
}

}  // namespace
}  // namespace unwindd::arch
