#include "arch/x86_64/signal_frame.h"

#include <cstring>
#include <vector>

#include "gtest/gtest.h"
#include "memory/factories.h"

namespace unwindd::arch::x86_64 {
namespace {

FrameAddress Ip(uint64_t pc) { return FrameAddress::InstructionPointer(pc); }

constexpr uint64_t kCode = 0x401000;
constexpr uint64_t kStack = 0x7ffd0000;

TEST(SignalFrameTest, RecognisesRtSigreturn) {
  std::vector<uint8_t> code = {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05, 0x90};
  std::unique_ptr<memory::Memory> m = memory::CreateBufferMemory(kCode, code);
  EXPECT_TRUE(IsSigreturnTrampoline(*m, Ip(kCode)));
  EXPECT_TRUE(IsSigreturnTrampoline(*m, Ip(kCode + 7)));  // at `syscall`
  EXPECT_FALSE(IsSigreturnTrampoline(*m, Ip(kCode + 1)));
  // Just past `syscall`: in the kernel's rt_sigreturn, for frame 0 only.
  EXPECT_TRUE(IsSigreturnTrampoline(*m, Ip(kCode + 9)));
  EXPECT_FALSE(IsSigreturnTrampoline(*m, FrameAddress::ReturnAddress(kCode + 9)));
  EXPECT_FALSE(IsSigreturnTrampoline(*m, Ip(kCode + 10)));
  code[3] = 0x3c;  // exit(2), not rt_sigreturn(15)
  std::unique_ptr<memory::Memory> other = memory::CreateBufferMemory(kCode, code);
  EXPECT_FALSE(IsSigreturnTrampoline(*other, Ip(kCode)));
}

TEST(SignalFrameTest, RestoresFromUcontext) {
  // ucontext: uc_flags, uc_link, uc_stack (24 bytes), then sigcontext:
  // r8..r15, rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip.
  std::vector<uint8_t> stack(40 + 17 * 8);
  for (uint64_t i = 0; i < 17; ++i) {
    uint64_t v = 0x1000 + i;
    std::memcpy(stack.data() + 40 + i * 8, &v, 8);
  }
  std::unique_ptr<memory::Memory> m = memory::CreateBufferMemory(kStack, stack);
  absl::StatusOr<RegisterSet> regs = RestoreFromSigframe(*m, kStack);
  ASSERT_TRUE(regs.ok()) << regs.status();
  EXPECT_EQ(regs->Get(8), 0x1000u);   // r8
  EXPECT_EQ(regs->Get(15), 0x1007u);  // r15
  EXPECT_EQ(regs->Get(5), 0x1008u);   // rdi
  EXPECT_EQ(regs->Get(4), 0x1009u);   // rsi
  EXPECT_EQ(regs->Get(6), 0x100au);   // rbp
  EXPECT_EQ(regs->Get(3), 0x100bu);   // rbx
  EXPECT_EQ(regs->Get(1), 0x100cu);   // rdx
  EXPECT_EQ(regs->Get(0), 0x100du);   // rax
  EXPECT_EQ(regs->Get(2), 0x100eu);   // rcx
  EXPECT_EQ(regs->sp(), 0x100fu);
  EXPECT_EQ(regs->pc(), 0x1010u);
}

TEST(SignalFrameTest, UnreadableFrameIsOutOfRange) {
  std::unique_ptr<memory::Memory> m = memory::CreateBufferMemory(kStack, std::vector<uint8_t>(64));
  EXPECT_TRUE(absl::IsOutOfRange(RestoreFromSigframe(*m, kStack).status()));
  EXPECT_TRUE(absl::IsOutOfRange(RestoreFromSigframe(*m, ~uint64_t{0} - 8).status()));
}

}  // namespace
}  // namespace unwindd::arch::x86_64
