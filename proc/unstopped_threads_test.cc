#include "proc/unstopped_threads.h"

#include <unistd.h>

#include <cerrno>

#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace unwindd::proc {
namespace {

// The three forms of /proc/PID/task/TID/syscall (fs/proc/base.c).
TEST(ParseSyscallFile, TheKernelsThreeForms) {
  // In a system call: its number, six arguments, sp, pc.
  std::optional<BlockedRegisters> r = ParseSyscallFile(
      "58 0x55f53e9501ed 0x1 0x1 0x7f12d8422850 0x0 0x7fff2ae5e017 0x7fff2ae5e100 "
      "0x7f12d84e33b8\n");
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r->in_syscall);
  EXPECT_EQ(r->sp, 0x7fff2ae5e100u);
  EXPECT_EQ(r->pc, 0x7f12d84e33b8u);
  EXPECT_EQ(r->args[0], 0x55f53e9501edu);
  EXPECT_EQ(r->args[3], 0x7f12d8422850u);
  EXPECT_EQ(r->args[5], 0x7fff2ae5e017u);
  // Blocked outside one (a page fault): sp and pc only.
  r = ParseSyscallFile("-1 0x7ffd0000 0x401000\n");
  ASSERT_TRUE(r.has_value());
  EXPECT_FALSE(r->in_syscall);
  EXPECT_EQ(r->sp, 0x7ffd0000u);
  EXPECT_EQ(r->pc, 0x401000u);
  // Not blocked: nothing to walk from.
  EXPECT_FALSE(ParseSyscallFile("running\n").has_value());
  EXPECT_FALSE(ParseSyscallFile("").has_value());
  EXPECT_FALSE(ParseSyscallFile("-1 0x1").has_value());
  EXPECT_FALSE(ParseSyscallFile("-1 7ffd0000 0x401000").has_value());  // no 0x
  EXPECT_FALSE(ParseSyscallFile("-1 0xzz 0x401000").has_value());
}

// syscall(2)'s argument registers, as DWARF numbers.
TEST(SyscallArgumentRegisters, PerArch) {
  EXPECT_EQ(SyscallArgumentRegisters(arch::Arch::kX86_64), (std::array<int, 6>{5, 4, 1, 10, 8, 9}));
  EXPECT_EQ(SyscallArgumentRegisters(arch::Arch::kX86), (std::array<int, 6>{3, 1, 2, 6, 7, 5}));
  EXPECT_EQ(SyscallArgumentRegisters(arch::Arch::kAArch64), (std::array<int, 6>{0, 1, 2, 3, 4, 5}));
}

// A timer armed for a past deadline interrupts a blocking call at once.
TEST(DeadlineTimer, InterruptsABlockingCall) {
  DeadlineTimer timer;
  ASSERT_TRUE(timer.Arm(absl::Now() + absl::Milliseconds(20)));
  const absl::Time start = absl::Now();
  // pause() returns only when a handled signal arrives.
  EXPECT_EQ(pause(), -1);
  EXPECT_EQ(errno, EINTR);
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  timer.Disarm();
}

}  // namespace
}  // namespace unwindd::proc
